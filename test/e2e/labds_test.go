package e2e

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// labDaemonSet plays, for the group's vrrpd DaemonSet, the two parts of Kubernetes the lab
// does not run: the kubelets' readiness probes and the DaemonSet controller's status. The
// probe is the DaemonSet's own: its exec command (vrrpd probe ready --state-dir ...), run
// against each node's vrrpd's probe socket in the lab, every periodSeconds with its
// timeout; a pod is ready after one success and unready after failureThreshold failures
// in a row, as the kubelet counts them. The status it writes is the DaemonSet
// controller's arithmetic over the lab's pods: desired = the lab's nodes, current and
// updated = the nodes with a running vrrpd, ready and available = those whose probe
// says ready. Simulated: the pods themselves (processes, not Pod objects), the kubelet's
// scheduling of the probes (a loop here) and the controller.
type labDaemonSet struct {
	t        testing.TB
	ns, name string
	desired  int
	argv     []string
	period   time.Duration
	timeout  time.Duration
	failures int

	mu       sync.Mutex
	pods     map[string]string // node -> its vrrpd's state directory
	ready    map[string]bool
	failed   map[string]int
	allReady time.Time // when every desired pod was first ready (zero: not yet, or not since)
	wake     chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup
}

// startLabDaemonSet starts playing the kubelets and the DaemonSet controller for the
// group's DaemonSet in ns, over desired nodes, none of which runs vrrpd yet.
func startLabDaemonSet(t testing.TB, ns string, desired int) *labDaemonSet {
	t.Helper()
	var ds appsv1.DaemonSet
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: groupName + "-vrrpd"}, &ds); err != nil {
		t.Fatal(err)
	}
	p := ds.Spec.Template.Spec.Containers[0].ReadinessProbe
	if p == nil || p.Exec == nil || len(p.Exec.Command) == 0 {
		t.Fatalf("the DaemonSet's readiness probe %+v is not an exec probe", p)
	}
	l := &labDaemonSet{
		t: t, ns: ns, name: ds.Name, desired: desired, argv: p.Exec.Command,
		period:   time.Duration(max(p.PeriodSeconds, 1)) * time.Second,
		timeout:  time.Duration(max(p.TimeoutSeconds, 1)) * time.Second,
		failures: int(max(p.FailureThreshold, 1)),
		pods:     map[string]string{}, ready: map[string]bool{}, failed: map[string]int{},
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	l.wg.Add(1)
	go l.run()
	t.Cleanup(l.stop)
	return l
}

// started records that node runs a vrrpd with that state directory (its pod started):
// its first probe runs at once, as the kubelet's does with no initialDelaySeconds.
func (l *labDaemonSet) started(node, stateDir string) {
	l.mu.Lock()
	l.pods[node], l.ready[node], l.failed[node] = stateDir, false, 0
	l.mu.Unlock()
	l.poke()
}

// stopped records that node's pod is gone.
func (l *labDaemonSet) stopped(node string) {
	l.mu.Lock()
	delete(l.pods, node)
	delete(l.ready, node)
	l.mu.Unlock()
	l.poke()
}

// isReady reports whether the kubelet would call node's pod ready now.
func (l *labDaemonSet) isReady(node string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready[node]
}

// allReadySince is when every desired pod was first ready, if they all are.
func (l *labDaemonSet) allReadySince() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allReady, !l.allReady.IsZero()
}

func (l *labDaemonSet) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *labDaemonSet) stop() {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	l.wg.Wait()
}

func (l *labDaemonSet) run() {
	defer l.wg.Done()
	tick := time.NewTicker(l.period)
	defer tick.Stop()
	for {
		l.probeAll()
		l.write(l.status())
		select {
		case <-l.done:
			return
		case <-tick.C:
		case <-l.wake:
		}
	}
}

// probeAll runs each pod's readiness probe once.
func (l *labDaemonSet) probeAll() {
	l.mu.Lock()
	pods := map[string]string{}
	for n, d := range l.pods {
		pods[n] = d
	}
	l.mu.Unlock()
	for node, dir := range pods {
		ok := l.probe(dir)
		l.mu.Lock()
		if _, still := l.pods[node]; still {
			if ok {
				l.ready[node], l.failed[node] = true, 0
			} else if l.failed[node]++; l.failed[node] >= l.failures {
				l.ready[node] = false
			}
		}
		l.mu.Unlock()
	}
}

// probe runs the DaemonSet's readiness command as the container would see it: the image's
// /vrrpd is the test's vrrpd binary, the pod's /run/vrrpd the node's state directory.
func (l *labDaemonSet) probe(stateDir string) bool {
	repl := strings.NewReplacer("/vrrpd", vrrpdBinary(l.t), "/run/vrrpd", stateDir)
	argv := make([]string, len(l.argv))
	for i, a := range l.argv {
		argv[i] = repl.Replace(a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	return exec.CommandContext(ctx, argv[0], argv[1:]...).Run() == nil
}

// status is the DaemonSet controller's status of the lab's pods (generation filled in on
// writing).
func (l *labDaemonSet) status() appsv1.DaemonSetStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	ready := 0
	for _, r := range l.ready {
		if r {
			ready++
		}
	}
	switch {
	case ready < l.desired:
		l.allReady = time.Time{}
	case l.allReady.IsZero():
		l.allReady = time.Now()
	}
	n := int32(len(l.pods))
	return appsv1.DaemonSetStatus{
		DesiredNumberScheduled: int32(l.desired), CurrentNumberScheduled: n, UpdatedNumberScheduled: n,
		NumberReady: int32(ready), NumberAvailable: int32(ready), NumberUnavailable: int32(l.desired - ready),
	}
}

// write puts st on the DaemonSet, observing its current generation, unless it is there
// already. A conflict with the operator's apply is tried again on the next turn.
func (l *labDaemonSet) write(st appsv1.DaemonSetStatus) {
	ctx := context.Background()
	var ds appsv1.DaemonSet
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: l.ns, Name: l.name}, &ds); err != nil {
		return
	}
	st.ObservedGeneration = ds.Generation
	if equality.Semantic.DeepEqual(ds.Status, st) {
		return
	}
	ds.Status = st
	if err := env.Client.Status().Update(ctx, &ds); err != nil && !apierrors.IsConflict(err) {
		l.t.Logf("lab DaemonSet status: %v", err)
	}
}
