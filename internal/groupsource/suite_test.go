package groupsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
)

// One API server (kube-apiserver + etcd) for the package, started by
// TestMain when the envtest binaries are there. The Translate tests need
// none and run either way.
var (
	testConfig *rest.Config
	k8s        client.Client
	testEnv    *testenv.Env
	nsCounter  atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, nil, func(e *testenv.Env) {
		testEnv, testConfig, k8s = e, e.Config, e.Client
	}))
}

// needAPI skips a test that needs the API server when envtest is not
// available (TestMain already failed the run under CI=true).
func needAPI(t testing.TB) {
	t.Helper()
	testenv.Require(t, testEnv)
}

func newNamespace(t testing.TB, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), nsCounter.Add(1))
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// createGroup creates the group ns/name with g's spec, then writes g's
// status as the operator would.
func createGroup(t testing.TB, ns, name string, g *v1alpha1.KeepalivedGroup) *v1alpha1.KeepalivedGroup {
	t.Helper()
	obj := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: g.Spec}
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create group: %v", err)
	}
	obj.Status = g.Status
	if err := k8s.Status().Update(context.Background(), obj); err != nil {
		t.Fatalf("write status: %v", err)
	}
	return obj
}

// updateStatus changes the stored group's status.
func updateStatus(t testing.TB, ns, name string, mutate func(*v1alpha1.KeepalivedGroupStatus)) {
	t.Helper()
	ctx := context.Background()
	var g v1alpha1.KeepalivedGroup
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &g); err != nil {
		t.Fatal(err)
	}
	mutate(&g.Status)
	if err := k8s.Status().Update(ctx, &g); err != nil {
		t.Fatalf("update status: %v", err)
	}
}

// running is a Watch in a goroutine, its updates on a channel.
type running struct {
	updates chan Update
	logs    *logBuffer
	stop    func() error
}

func startWatch(t testing.TB, rc *rest.Config, opts Options) *running {
	t.Helper()
	r := &running{updates: make(chan Update, 16), logs: &logBuffer{}}
	opts.OnChange = func(u Update) { r.updates <- u }
	var out io.Writer = r.logs
	if _, bench := t.(*testing.B); !bench {
		out = io.MultiWriter(r.logs, testWriter{t})
	}
	opts.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 20*time.Millisecond, 200*time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, rc, opts) }()
	var once sync.Once
	var err error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				err = errors.New("Watch did not return after cancel")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := r.stop(); !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v, want context.Canceled", err)
		}
	})
	return r
}

// next waits for the next update.
func (r *running) next(t testing.TB) Update {
	t.Helper()
	select {
	case u := <-r.updates:
		return u
	case <-time.After(20 * time.Second):
		t.Fatalf("no update in 20s; log:\n%s", r.logs)
		return Update{}
	}
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testWriter sends the watcher's log to the test's log (shown with -v or on
// failure).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
