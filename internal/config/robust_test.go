package config

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
)

// seedConfigs are the real keepalived configs and the YAML files of this package.
func seedConfigs(t testing.TB) map[string][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*"))
	confs, _ := fixture.KeepalivedConfigs()
	files = append(files, confs...)
	files = append(files, filepath.Join("..", "..", "deploy", "vrrpd", "vrrpd.yaml"))
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	if len(out) < 10 {
		t.Fatalf("only %d seed configs", len(out))
	}
	return out
}

// checkParse parses data and checks the contract: never a panic, an error means no
// Config, and every error and warning names the file.
func checkParse(t *testing.T, name string, data []byte) {
	t.Helper()
	cfg, ws, err := Parse(name, data)
	if err != nil && cfg != nil {
		t.Fatalf("%q: error %v with a Config", data, err)
	}
	if err == nil && cfg == nil {
		t.Fatalf("%q: no error and no Config", data)
	}
	for _, w := range ws {
		if w.Pos.File == "" {
			t.Fatalf("%q: warning without a file: %v", data, w)
		}
	}
}

// Every truncation of the real configs, and random byte damage, parses or fails cleanly.
func TestTruncatedAndDamagedConfigs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, data := range seedConfigs(t) {
		for n := 0; n <= len(data); n++ {
			checkParse(t, name, data[:n])
		}
		for range 300 {
			d := append([]byte(nil), data...)
			for range 1 + rng.IntN(4) {
				i := rng.IntN(len(d))
				switch rng.IntN(3) {
				case 0:
					const alphabet = "{}\"#!\n \t:-[]0123456789./x"
					d[i] = alphabet[rng.IntN(len(alphabet))]
				case 1:
					d = append(d[:i], d[i+1:]...)
				default:
					d = append(d[:i], append([]byte{byte(rng.IntN(256))}, d[i:]...)...)
				}
				if len(d) == 0 {
					break
				}
			}
			checkParse(t, name, d)
		}
	}
}

// FuzzParse: go test -run "^$" -fuzz FuzzParse -fuzzminimizetime 2s ./internal/config
// (minimizing the kilobyte-sized seeds otherwise stalls the run for a minute at a time).
func FuzzParse(f *testing.F) {
	for _, data := range seedConfigs(f) {
		f.Add(data)
	}
	// The public keepalived.conf files too (not in seedConfigs: every truncation of each
	// would make TestTruncatedAndDamagedConfigs slow).
	corpus, _ := filepath.Glob(fixture.Path("keepalived-corpus", "*.conf"))
	for _, c := range corpus {
		if data, err := os.ReadFile(c); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// include reads whatever the pattern names (a /proc file can block a read
		// forever); includes have their own tests, the fuzzer stays off the disk.
		if bytes.Contains(data, []byte("include")) {
			t.Skip()
		}
		checkParse(t, "fuzz.conf", data)
	})
}

func BenchmarkLoadKeepalived(b *testing.B) {
	path := fixture.Keepalived("garp-na-h1.conf")
	for b.Loop() {
		if _, _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadYAML(b *testing.B) {
	path := filepath.Join("..", "..", "deploy", "vrrpd", "vrrpd.yaml")
	for b.Loop() {
		if _, _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}
