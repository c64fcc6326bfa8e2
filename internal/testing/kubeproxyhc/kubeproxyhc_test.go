package kubeproxyhc

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
)

func TestAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, "ns", "web")
	defer s.Close()
	get := func() (int, http.Header, map[string]any) {
		t.Helper()
		resp, err := http.Get("http://" + ln.Addr().String() + "/any/path")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("body %q is not JSON: %v", b, err)
		}
		return resp.StatusCode, resp.Header, v
	}
	code, h, v := get()
	if code != 503 || h.Get("Content-Type") != "application/json" || h.Get("X-Content-Type-Options") != "nosniff" ||
		v["localEndpoints"] != 0.0 || v["service"].(map[string]any)["name"] != "web" {
		t.Fatalf("no endpoints: %d %v %v", code, h, v)
	}
	s.SetEndpoints(2)
	if code, _, v = get(); code != 200 || v["localEndpoints"] != 2.0 || v["serviceProxyHealthy"] != true {
		t.Fatalf("two endpoints: %d %v", code, v)
	}
	s.SetProxyHealthy(false)
	if code, _, v = get(); code != 503 || v["serviceProxyHealthy"] != false {
		t.Fatalf("proxy unhealthy: %d %v", code, v)
	}
}
