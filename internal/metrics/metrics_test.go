package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

var lastChange = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func sampleSnapshot() metrics.Snapshot {
	return metrics.Snapshot{
		Instances: []metrics.Instance{
			{
				Name: "VI_1", Interface: "eth0", Family: metrics.FamilyIPv4, VRID: 51, Version: 3,
				State: vrrp.StateMaster, Priority: 150, BasePriority: 100,
				Master:      netip.MustParseAddr("10.99.0.10"),
				VIPs:        []netip.Prefix{netip.MustParsePrefix("10.99.0.100/24")},
				Transitions: 3, PreexistingVIPs: 1, ReaddedVIPs: 2, SendErrors: 4,
				LastTransition: lastChange,
				Counters: vrrp.Counters{
					AdvertRcvd: 1, AdvertSent: 2, BecomeMaster: 3, ReleaseMaster: 4, PacketLenErr: 5,
					AdvertIntervalErr: 6, IPTTLErr: 7, InvalidTypeRcvd: 8, AddrListErr: 9,
					InvalidAuthType: 10, AuthTypeMismatch: 11, AuthFailure: 12, PriZeroRcvd: 13,
					PriZeroSent: 14, ChecksumErr: 15, VersionErr: 16,
				},
			},
			{
				Name: "VI_6", Interface: "eth0", Family: metrics.FamilyIPv6, VRID: 52, Version: 3,
				State: vrrp.StateBackup, Priority: 90, BasePriority: 90,
				Master: netip.MustParseAddr("fe80::1"),
				VIPs:   []netip.Prefix{netip.MustParsePrefix("fd00:99::100/64")},
			},
			{
				Name: "VI_F", Interface: "eth1", Family: metrics.FamilyIPv4, VRID: 1, Version: 2,
				State: vrrp.StateFault, Priority: 100, BasePriority: 100,
			},
		},
		Interfaces: []metrics.Interface{
			{Name: "eth0", Family: metrics.FamilyIPv4, Received: 1000, Unattributed: 17, OtherVRID: 46},
		},
	}
}

// gather collects the collector's families through a pedantic registry, which checks
// that every series matches a described family.
func gather(t *testing.T, src metrics.Source) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(src))
	list, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	mfs := make(map[string]*dto.MetricFamily, len(list))
	for _, mf := range list {
		mfs[mf.GetName()] = mf
	}
	return mfs
}

// value finds the sample of family name with exactly the given labels.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
next:
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, lp := range m.GetLabel() {
			if labels[lp.GetName()] != lp.GetValue() {
				continue next
			}
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestKeepalivedExporterMetrics(t *testing.T) {
	mfs := gather(t, metrics.SourceFunc(sampleSnapshot))

	if v, ok := value(t, mfs, "keepalived_up", nil); !ok || v != 1 {
		t.Errorf("keepalived_up = %v (found %v), want 1", v, ok)
	}
	vi1 := map[string]string{"name": "VI_1", "intf": "eth0", "vrid": "51", "state": "MASTER"}
	for i, name := range []string{
		"keepalived_vrrp_advert_rcvd", "keepalived_vrrp_advert_sent", "keepalived_vrrp_become_master",
		"keepalived_vrrp_release_master", "keepalived_vrrp_packet_len_err", "keepalived_vrrp_advert_interval_err",
		"keepalived_vrrp_ip_ttl_err", "keepalived_vrrp_invalid_type_rcvd", "keepalived_vrrp_addr_list_err",
		"keepalived_vrrp_invalid_authtype", "keepalived_vrrp_authtype_mismatch", "keepalived_vrrp_auth_failure",
		"keepalived_vrrp_pri_zero_rcvd", "keepalived_vrrp_pri_zero_sent", "vrrpd_checksum_err", "vrrpd_version_err",
	} {
		if mfs[name] == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if mfs[name].GetType() != dto.MetricType_COUNTER {
			t.Errorf("%s is a %v, want a counter", name, mfs[name].GetType())
		}
		// The sample counters are numbered 1..16 in keepalived's order.
		if v, ok := value(t, mfs, name, vi1); !ok || v != float64(i+1) {
			t.Errorf("%s%v = %v (found %v), want %d", name, vi1, v, ok, i+1)
		}
		if n := len(mfs[name].GetMetric()); n != 3 {
			t.Errorf("%s has %d series, want one per instance (3)", name, n)
		}
	}
	// The state gauge has no state label and keepalived's numbering.
	for _, c := range []struct {
		name, intf, vrid string
		want             float64
	}{{"VI_1", "eth0", "51", 2}, {"VI_6", "eth0", "52", 1}, {"VI_F", "eth1", "1", 3}} {
		l := map[string]string{"name": c.name, "intf": c.intf, "vrid": c.vrid}
		if v, ok := value(t, mfs, "keepalived_vrrp_state", l); !ok || v != c.want {
			t.Errorf("keepalived_vrrp_state%v = %v (found %v), want %v", l, v, ok, c.want)
		}
	}
	// The state label of the per-instance counters follows the state.
	if _, ok := value(t, mfs, "keepalived_vrrp_advert_rcvd", map[string]string{"name": "VI_F", "intf": "eth1", "vrid": "1", "state": "FAULT"}); !ok {
		t.Error("VI_F's counters are not labelled state=FAULT")
	}
}

func TestVrrpdMetrics(t *testing.T) {
	mfs := gather(t, metrics.SourceFunc(sampleSnapshot))
	vi1 := map[string]string{"name": "VI_1", "intf": "eth0", "vrid": "51"}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"vrrpd_priority", vi1, 150},
		{"vrrpd_base_priority", vi1, 100},
		{"vrrpd_transitions_total", vi1, 3},
		{"vrrpd_vip_preexisting_total", vi1, 1},
		{"vrrpd_vip_readded_total", vi1, 2},
		{"vrrpd_advert_send_errors_total", vi1, 4},
		{"vrrpd_last_transition_timestamp_seconds", vi1, float64(lastChange.Unix())},
		{"vrrpd_last_transition_timestamp_seconds", map[string]string{"name": "VI_F", "intf": "eth1", "vrid": "1"}, 0},
		{"vrrpd_instances", map[string]string{"state": "MASTER"}, 1},
		{"vrrpd_instances", map[string]string{"state": "BACKUP"}, 1},
		{"vrrpd_instances", map[string]string{"state": "FAULT"}, 1},
		{"vrrpd_instances", map[string]string{"state": "INIT"}, 0},
		{"vrrpd_packets_received_total", map[string]string{"intf": "eth0", "family": "inet"}, 1000},
		{"vrrpd_malformed_dropped_total", map[string]string{"intf": "eth0", "family": "inet"}, 17},
		{"vrrpd_other_vrid_total", map[string]string{"intf": "eth0", "family": "inet"}, 46},
	}
	for _, c := range checks {
		if v, ok := value(t, mfs, c.name, c.labels); !ok || v != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
}

// With no instances, scrapes still work and say so: keepalived_up 1 and zero per state.
func TestEmptySnapshot(t *testing.T) {
	mfs := gather(t, metrics.SourceFunc(func() metrics.Snapshot { return metrics.Snapshot{} }))
	if _, ok := mfs["keepalived_vrrp_advert_rcvd"]; ok {
		t.Error("per-instance counters exported with no instances")
	}
	if v, ok := value(t, mfs, "vrrpd_instances", map[string]string{"state": "MASTER"}); !ok || v != 0 {
		t.Errorf("vrrpd_instances{MASTER} = %v (found %v), want 0", v, ok)
	}
}

// An instance name that is not valid UTF-8 fails that series, never the daemon: the
// scrape serves the rest, and it still parses.
func TestInvalidLabelDoesNotPanic(t *testing.T) {
	src := metrics.SourceFunc(func() metrics.Snapshot {
		return metrics.Snapshot{Instances: []metrics.Instance{{Name: "bad\xff", Interface: "eth0", VRID: 1}}}
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(src))
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("Gather accepted a label value that is not valid UTF-8 (err %v)", err)
	}
	srv := newServer(t, src, metrics.Options{})
	resp, body := get(t, srv.URL+metrics.MetricsPath)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	if strings.Contains(body, `name="bad`) {
		t.Errorf("the invalid series was written:\n%s", body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil || mfs["keepalived_up"] == nil || mfs["vrrpd_instances"] == nil {
		t.Errorf("the rest does not parse (%v) or lacks keepalived_up", err)
	}
}

type fixedSource struct {
	snap atomic.Pointer[metrics.Snapshot]
}

func (f *fixedSource) Snapshot() metrics.Snapshot { return *f.snap.Load() }

// testServer is a metrics server on a loopback port.
type testServer struct{ URL string }

func newServer(t testing.TB, src metrics.Source, opt metrics.Options) testServer {
	t.Helper()
	s, err := metrics.NewServer("127.0.0.1:0", src, opt)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { s.Close() })
	return testServer{URL: "http://" + ln.Addr().String()}
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestMetricsEndpoint(t *testing.T) {
	src := &fixedSource{}
	snap := sampleSnapshot()
	src.snap.Store(&snap)
	srv := newServer(t, src, metrics.Options{})

	// Prometheus asks for OpenMetrics first; the answer must still be the classic text
	// format, whose counter names carry no added _total.
	resp, body := get(t, srv.URL+metrics.MetricsPath,
		"Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want the text format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	for _, name := range []string{"keepalived_up", "keepalived_vrrp_advert_rcvd", "keepalived_vrrp_state",
		"vrrpd_priority", "go_goroutines", "process_resident_memory_bytes"} {
		if mfs[name] == nil {
			t.Errorf("%s missing from /metrics", name)
		}
	}
	if !strings.Contains(body, `keepalived_vrrp_advert_sent{intf="eth0",name="VI_1",state="MASTER",vrid="51"} 2`) {
		t.Errorf("advert_sent line not found in:\n%s", body)
	}
	if strings.Contains(body, "keepalived_vrrp_advert_rcvd_total") {
		t.Error("keepalived counter exported with a _total suffix")
	}

	// A scrape reads the latest snapshot.
	next := sampleSnapshot()
	next.Instances[0].Counters.AdvertSent = 99
	src.snap.Store(&next)
	_, body = get(t, srv.URL+metrics.MetricsPath)
	if !strings.Contains(body, `keepalived_vrrp_advert_sent{intf="eth0",name="VI_1",state="MASTER",vrid="51"} 99`) {
		t.Error("second scrape does not show the new snapshot")
	}
}

func TestHealthz(t *testing.T) {
	var hb metrics.Heartbeat
	srv := newServer(t, metrics.SourceFunc(sampleSnapshot), metrics.Options{Health: hb.Check(time.Second)})

	resp, body := get(t, srv.URL+metrics.HealthPath)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "not started") {
		t.Errorf("before the first beat: %s %q, want 503 not started", resp.Status, body)
	}
	hb.Beat(time.Now())
	if resp, body = get(t, srv.URL+metrics.HealthPath); resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Errorf("after a beat: %s %q, want 200 ok", resp.Status, body)
	}
	hb.Beat(time.Now().Add(-5 * time.Second))
	if resp, body = get(t, srv.URL+metrics.HealthPath); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "silent") {
		t.Errorf("after 5s of silence: %s %q, want 503 silent", resp.Status, body)
	}

	// Without a health function, always healthy.
	srv2 := newServer(t, metrics.SourceFunc(sampleSnapshot), metrics.Options{})
	if resp, _ := get(t, srv2.URL+metrics.HealthPath); resp.StatusCode != http.StatusOK {
		t.Errorf("no health func: %s", resp.Status)
	}
	// Any error from the health function is a 503 that names it.
	srv3 := newServer(t, metrics.SourceFunc(sampleSnapshot), metrics.Options{Health: func() error { return errors.New("loop wedged") }})
	if resp, body := get(t, srv3.URL+metrics.HealthPath); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "loop wedged") {
		t.Errorf("failing health func: %s %q", resp.Status, body)
	}
}

func TestStatus(t *testing.T) {
	srv := newServer(t, metrics.SourceFunc(sampleSnapshot), metrics.Options{})
	resp, body := get(t, srv.URL+metrics.StatusPath)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /status: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	// The JSON field names are an interface; check them on the raw document.
	var raw struct {
		Instances []map[string]any `json:"instances"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	first := raw.Instances[0]
	for k, want := range map[string]any{
		"name": "VI_1", "interface": "eth0", "family": "inet", "vrid": 51.0, "version": 3.0, "state": "MASTER",
		"priority": 150.0, "base_priority": 100.0, "master": "10.99.0.10", "transitions": 3.0,
		"last_transition": "2026-11-22T03:00:00Z",
	} {
		if first[k] != want {
			t.Errorf("status instances[0].%s = %#v, want %#v", k, first[k], want)
		}
	}
	if _, ok := raw.Instances[2]["master"]; ok {
		t.Error("an instance with no known master has a master field")
	}

	st, err := metrics.GetStatus(context.Background(), nil, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Instances) != 3 {
		t.Fatalf("GetStatus: %d instances, want 3", len(st.Instances))
	}
	in := st.Instances[0]
	if in.Name != "VI_1" || in.State != "MASTER" || len(in.VIPs) != 1 || in.VIPs[0] != "10.99.0.100/24" ||
		in.Counters["advert_rcvd"] != 1 || in.Counters["pri_zero_sent"] != 14 || in.Counters["checksum_err"] != 15 {
		t.Errorf("GetStatus instance 0 = %+v", in)
	}
	if st.Instances[2].Interface != "eth1" {
		t.Errorf("instances not sorted by interface then VRID: %+v", st.Instances)
	}
	if len(st.Interfaces) != 1 || st.Interfaces[0].Unattributed != 17 || st.Interfaces[0].OtherVRID != 46 {
		t.Errorf("interfaces = %+v", st.Interfaces)
	}

	var out bytes.Buffer
	if err := st.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.Contains(lines[1], "VI_1") || !strings.Contains(lines[1], "MASTER") || !strings.Contains(lines[1], "10.99.0.100/24") ||
		!strings.Contains(lines[3], "FAULT") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestGetStatusErrors(t *testing.T) {
	// Nothing listening.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if _, err := metrics.GetStatus(context.Background(), nil, url); err == nil || !strings.Contains(err.Error(), "is vrrpd running") {
		t.Errorf("no server: %v", err)
	}
	// Something else listening.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	if _, err := metrics.GetStatus(context.Background(), nil, other.URL); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "{not json") }))
	defer garbage.Close()
	if _, err := metrics.GetStatus(context.Background(), nil, garbage.URL); err == nil || !strings.Contains(err.Error(), "decode") {
		t.Errorf("bad JSON: %v", err)
	}
}

func TestNewServerDefaults(t *testing.T) {
	s, err := metrics.NewServer("", metrics.SourceFunc(sampleSnapshot), metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr != ":9650" || s.ReadHeaderTimeout == 0 {
		t.Errorf("server = addr %q, ReadHeaderTimeout %v", s.Addr, s.ReadHeaderTimeout)
	}
}

// TestRuntimeFamilies: /metrics has every go_* and process_* family client_golang's Go and
// process collectors served before vrrpd wrote its own exposition, with the same types, so
// dashboards built on them keep working.
func TestRuntimeFamilies(t *testing.T) {
	srv := newServer(t, metrics.SourceFunc(sampleSnapshot), metrics.Options{})
	_, body := get(t, srv.URL+metrics.MetricsPath)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	for name, typ := range map[string]dto.MetricType{
		"go_gc_duration_seconds":               dto.MetricType_SUMMARY,
		"go_gc_gogc_percent":                   dto.MetricType_GAUGE,
		"go_gc_gomemlimit_bytes":               dto.MetricType_GAUGE,
		"go_goroutines":                        dto.MetricType_GAUGE,
		"go_info":                              dto.MetricType_GAUGE,
		"go_memstats_alloc_bytes":              dto.MetricType_GAUGE,
		"go_memstats_alloc_bytes_total":        dto.MetricType_COUNTER,
		"go_memstats_buck_hash_sys_bytes":      dto.MetricType_GAUGE,
		"go_memstats_frees_total":              dto.MetricType_COUNTER,
		"go_memstats_gc_sys_bytes":             dto.MetricType_GAUGE,
		"go_memstats_heap_alloc_bytes":         dto.MetricType_GAUGE,
		"go_memstats_heap_idle_bytes":          dto.MetricType_GAUGE,
		"go_memstats_heap_inuse_bytes":         dto.MetricType_GAUGE,
		"go_memstats_heap_objects":             dto.MetricType_GAUGE,
		"go_memstats_heap_released_bytes":      dto.MetricType_GAUGE,
		"go_memstats_heap_sys_bytes":           dto.MetricType_GAUGE,
		"go_memstats_last_gc_time_seconds":     dto.MetricType_GAUGE,
		"go_memstats_mallocs_total":            dto.MetricType_COUNTER,
		"go_memstats_mcache_inuse_bytes":       dto.MetricType_GAUGE,
		"go_memstats_mcache_sys_bytes":         dto.MetricType_GAUGE,
		"go_memstats_mspan_inuse_bytes":        dto.MetricType_GAUGE,
		"go_memstats_mspan_sys_bytes":          dto.MetricType_GAUGE,
		"go_memstats_next_gc_bytes":            dto.MetricType_GAUGE,
		"go_memstats_other_sys_bytes":          dto.MetricType_GAUGE,
		"go_memstats_stack_inuse_bytes":        dto.MetricType_GAUGE,
		"go_memstats_stack_sys_bytes":          dto.MetricType_GAUGE,
		"go_memstats_sys_bytes":                dto.MetricType_GAUGE,
		"go_sched_gomaxprocs_threads":          dto.MetricType_GAUGE,
		"go_threads":                           dto.MetricType_GAUGE,
		"process_cpu_seconds_total":            dto.MetricType_COUNTER,
		"process_max_fds":                      dto.MetricType_GAUGE,
		"process_network_receive_bytes_total":  dto.MetricType_COUNTER,
		"process_network_transmit_bytes_total": dto.MetricType_COUNTER,
		"process_open_fds":                     dto.MetricType_GAUGE,
		"process_resident_memory_bytes":        dto.MetricType_GAUGE,
		"process_start_time_seconds":           dto.MetricType_GAUGE,
		"process_virtual_memory_bytes":         dto.MetricType_GAUGE,
		"process_virtual_memory_max_bytes":     dto.MetricType_GAUGE,
	} {
		if mf := mfs[name]; mf == nil || mf.GetType() != typ {
			t.Errorf("%s: %v, want a %v", name, mf.GetType(), typ)
		}
	}
	if q := mfs["go_gc_duration_seconds"].GetMetric()[0].GetSummary().GetQuantile(); len(q) != 5 {
		t.Errorf("go_gc_duration_seconds has %d quantiles, want 5", len(q))
	}
}

// vrrpd's own metrics follow Prometheus naming conventions; only the keepalived_exporter
// names, kept for compatibility, may break them (counters without _total).
func TestLint(t *testing.T) {
	mfs := gather(t, metrics.SourceFunc(sampleSnapshot))
	var list []*dto.MetricFamily
	for _, mf := range mfs {
		list = append(list, mf)
	}
	problems, err := promlint.NewWithMetricFamilies(list).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		compat := strings.HasPrefix(p.Metric, "keepalived_") ||
			p.Metric == "vrrpd_checksum_err" || p.Metric == "vrrpd_version_err"
		if compat && strings.Contains(p.Text, "_total") {
			continue
		}
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// BenchmarkScrape255 is one full /metrics scrape of a daemon holding every VRID.
func BenchmarkScrape255(b *testing.B) {
	snap := metrics.Snapshot{}
	for i := range 255 {
		in := sampleSnapshot().Instances[0]
		in.Name, in.VRID = "VI_"+strings.Repeat("x", i%7)+string(rune('a'+i%26)), uint8(i+1)
		snap.Instances = append(snap.Instances, in)
	}
	srv := newServer(b, metrics.SourceFunc(func() metrics.Snapshot { return snap }), metrics.Options{})
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Get(srv.URL + metrics.MetricsPath)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status, err)
		}
	}
}

// TestStatusConflicts: a second holder shows in /status (its JSON names) and in
// `vrrpd status`'s table, and a status without one prints no such section.
func TestStatusConflicts(t *testing.T) {
	since := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	src := func() metrics.Snapshot {
		s := sampleSnapshot()
		s.Conflicts = []metrics.VIPConflict{{Instance: "VI_1", Interface: "eth0", VRID: 51,
			VIP: netip.MustParseAddr("10.99.0.100"), MAC: "52:54:00:00:00:99", Since: since}}
		return s
	}
	srv := newServer(t, metrics.SourceFunc(src), metrics.Options{})
	_, body := get(t, srv.URL+metrics.StatusPath)
	var raw struct {
		Conflicts []map[string]any `json:"conflicts"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Conflicts) != 1 || raw.Conflicts[0]["instance"] != "VI_1" || raw.Conflicts[0]["vip"] != "10.99.0.100" ||
		raw.Conflicts[0]["mac"] != "52:54:00:00:00:99" || raw.Conflicts[0]["since"] != "2026-11-28T12:00:00Z" {
		t.Errorf("status conflicts = %+v", raw.Conflicts)
	}
	var out bytes.Buffer
	if err := metrics.NewStatus(src()).WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ALSO ANSWERED BY") || !strings.Contains(out.String(), "52:54:00:00:00:99") {
		t.Errorf("table:\n%s", out.String())
	}
	out.Reset()
	if err := metrics.NewStatus(sampleSnapshot()).WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "ALSO ANSWERED BY") {
		t.Errorf("a conflicts section without conflicts:\n%s", out.String())
	}
}
