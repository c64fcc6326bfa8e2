package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/privtest"
)

// helperEnv makes the test binary the child of TestScriptsGetNoAmbientCapabilities: it
// writes its own ambient set and the one its scripts get, without and then with
// SpawnWithoutAmbientCapabilities, to the file the variable names.
const helperEnv = "VRRPD_PROC_AMBIENT_HELPER"

func TestMain(m *testing.M) {
	if out := os.Getenv(helperEnv); out != "" {
		if err := ambientHelper(out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func ambientHelper(out string) error {
	own, err := ambientCaps()
	if err != nil {
		return err
	}
	script := func(file string) (string, error) {
		ok, _, err := Run(context.Background(), sh("grep CapAmb /proc/self/status > "+file), 10*time.Second)
		if !ok {
			return "", fmt.Errorf("script: %v", err)
		}
		b, err := os.ReadFile(file)
		return strings.TrimSpace(strings.TrimPrefix(string(b), "CapAmb:")), err
	}
	before, err := script(out + ".before")
	if err != nil {
		return err
	}
	if err := SpawnWithoutAmbientCapabilities(); err != nil {
		return err
	}
	after, err := script(out + ".after")
	if err != nil {
		return err
	}
	return os.WriteFile(out, fmt.Appendf(nil, "%x %s %s", own, before, after), 0o644)
}

// Under a unit that gives vrrpd ambient capabilities (the default one: CAP_NET_ADMIN and
// CAP_NET_RAW for its dynamic user), the scripts do not inherit them once
// SpawnWithoutAmbientCapabilities ran, as vrrpd runs it at start. The test starts itself
// as the helper with CAP_NET_RAW ambient, which every thread of the helper inherits.
func TestScriptsGetNoAmbientCapabilities(t *testing.T) {
	privtest.RequireRoot(t)
	out := filepath.Join(t.TempDir(), "caps")
	errc := make(chan error, 1)
	go func() {
		// Capabilities are a thread's: raise the ambient one on a thread of its own,
		// which starts the helper and then ends with its goroutine (never unlocked).
		runtime.LockOSThread()
		errc <- func() error {
			hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			if err := unix.Capget(&hdr, &data[0]); err != nil {
				return err
			}
			data[0].Inheritable |= 1 << unix.CAP_NET_RAW
			if err := unix.Capset(&hdr, &data[0]); err != nil {
				return err
			}
			if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, unix.CAP_NET_RAW, 0, 0); err != nil {
				return fmt.Errorf("raising an ambient capability: %w", err)
			}
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"="+out)
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("helper: %v\n%s", err, b)
			}
			return nil
		}()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		t.Fatalf("helper wrote %q", b)
	}
	own, _ := strconv.ParseUint(f[0], 16, 64)
	before, _ := strconv.ParseUint(f[1], 16, 64)
	after, _ := strconv.ParseUint(f[2], 16, 64)
	if own&(1<<unix.CAP_NET_RAW) == 0 || before&(1<<unix.CAP_NET_RAW) == 0 {
		t.Fatalf("the helper (%x) and its first script (%x) should hold CAP_NET_RAW ambient", own, before)
	}
	if after != 0 {
		t.Errorf("a script started after SpawnWithoutAmbientCapabilities holds ambient capabilities %x", after)
	}
}
