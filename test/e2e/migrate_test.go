package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/controller"
	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/oldoperator"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testoperator"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

const migrateLabel = "e2e.vrrp-operator.io/migrate"

// oldMasterDown is the old pods' Master_Down_Interval (keepalived's defaults: advert_int
// 1s, priority 100): the longest a VIP may go unserved during the takeover.
var oldMasterDown = vrrp.Version2.MasterDownInterval(100, time.Second)

// TestMigrationFromKeepalivedOperator takes a group over from keepalived-operator in the
// lab: real keepalived processes run the keepalived.conf its template renders for the group
// (one per node, on the node's own address, as its hostNetwork pods do, each with its pod's
// name as --config-id) and hold the VIPs, with the template's effects checked first: a
// spreadvips Service's addresses on their owners (state MASTER, priority 200), an
// externalTrafficPolicy: Local Service's address on the node with the endpoint (its
// vrrp_script asks the real kube-proxy on 127.0.0.1; the others' instances are in FAULT).
// Then the operator and vrrpd take over. The operator's gate waits for vrrpd's own
// readiness: the DaemonSet's ready count comes from its exec readiness probe (vrrpd probe
// ready) run against each vrrpd's probe socket (labDaemonSet). Throughout, every node's
// addresses are sampled every ~10 ms, a client pings every VIP every 10 ms and asks the
// wire for each VIP's MAC every 20 ms (arpWatch): no sample may show a VIP on two nodes, no
// VIP's answering MAC may change back and forth within a second, and no VIP may go
// unanswered longer than the old pods' Master_Down_Interval.
//
// Simulated: the kubelets (processes in the lab's namespaces, not pods; SIGTERM to
// keepalived when the operator deletes the old DaemonSet; the readiness probe's schedule),
// the DaemonSet controller's status arithmetic and the garbage collector (the test deletes
// the old pods), and the EndpointSlice controller (the test writes the Local Service's
// slice). The operator runs in the test process.
func TestMigrationFromKeepalivedOperator(t *testing.T) {
	need(t)
	vrrpdtest.KeepalivedBinary(t)
	vrrpdBinary(t) // build before the clocks start
	for _, tc := range []struct {
		name              string
		password, unicast bool
		sharing           v1alpha1.RouterSharing // unset: the CRD's default, Shared
	}{
		// passwordAuth: VRRPv2 before and after; routerSharing: PerService keeps the
		// original's router IDs after the takeover.
		{name: "password", password: true, sharing: v1alpha1.RouterSharingPerService},
		// No password: VRRPv2 shadow, then the group's VRRPv3. The original's manifest as
		// it is (no routerSharing): after the takeover the group converts to shared
		// routers, under the same samplers.
		{name: "v3", password: false},
		{name: "password-unicast", password: true, unicast: true, sharing: v1alpha1.RouterSharingPerService},
	} {
		t.Run(tc.name, func(t *testing.T) { runMigration(t, tc.password, tc.unicast, tc.sharing) })
	}
}

func runMigration(t *testing.T, password, unicast bool, sharing v1alpha1.RouterSharing) {
	ctx := context.Background()
	k8s := env.Client

	// 1. The lab, the proxy into it, the Nodes.
	lab := netlabtest.New(t, "client", "m1", "m2", "m3")
	cl := lab.Host("client")
	nodes := []*netlab.Host{lab.Host("m1"), lab.Host("m2"), lab.Host("m3")}
	startProxy(t, cl, proxyAddr, apiAddress(t))
	ns := newNamespace(t)
	labNodes(t, migrateLabel, nodes...)

	// 2. The group as keepalived-operator left it: spec, Services, the router IDs it
	// assigned (high ones, clear of the other tests' groups on eth0), its objects and pods.
	// Three plain Services; a spreadvips one with two addresses (an instance each, owned
	// by the first and the second pod by name); an externalTrafficPolicy: Local one whose
	// only endpoint is on m1.
	const pass = "s3cret"
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: groupName},
		Spec: v1alpha1.KeepalivedGroupSpec{
			Interface:      "eth0",
			NodeSelector:   map[string]string{migrateLabel: "true"},
			UnicastEnabled: unicast,
			RouterSharing:  sharing,
		},
	}
	if password {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keepalived-password"}, StringData: map[string]string{"password": pass}}
		if err := k8s.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
		g.Spec.PasswordAuth = &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: sec.Name}}
	}
	if err := k8s.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	vip := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 99, 0, byte(100 + i)}) }
	var vips []netip.Addr
	for i := range 6 {
		vips = append(vips, vip(i))
	}
	spread := []netip.Addr{vip(3), vip(4)}
	local := vip(5)
	const endpointNode = "m1" // not m3, whose highest address would win a tie
	var svcs []oldoperator.Service
	ids := map[string]int{}
	for i, name := range []string{"api", "db", "web"} {
		newService(t, ns, name, map[string]string{v1alpha1.AnnotationGroup: ns + "/" + groupName}, vips[i])
		key := ns + "/" + name
		svcs = append(svcs, oldoperator.Service{Key: key, VIPs: vips[i : i+1]})
		ids[key] = 231 + i
	}
	newService(t, ns, "spread", map[string]string{v1alpha1.AnnotationGroup: ns + "/" + groupName, v1alpha1.AnnotationSpreadVIPs: "true"}, spread...)
	svcs = append(svcs, oldoperator.Service{Key: ns + "/spread", VIPs: spread, Spread: true})
	for i, v := range spread {
		ids[ns+"/spread/"+v.String()] = 234 + i
	}
	localSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "local", Annotations: map[string]string{v1alpha1.AnnotationGroup: ns + "/" + groupName}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: ptr.To(false),
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			ExternalIPs:           []string{local.String()},
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := k8s.Create(ctx, localSvc); err != nil {
		t.Fatal(err)
	}
	hcPort := localSvc.Spec.HealthCheckNodePort
	if hcPort == 0 {
		t.Fatal("the API server allocated no healthCheckNodePort")
	}
	svcs = append(svcs, oldoperator.Service{Key: ns + "/local", VIPs: []netip.Addr{local}, HealthCheckNodePort: hcPort})
	ids[ns+"/local"] = 236
	g.Status.RouterIDs = ids
	if err := k8s.Status().Update(ctx, g); err != nil {
		t.Fatal(err)
	}

	// kube-proxy on every node answers the Local Service's health check, 200 on m1 only.
	// Listening on every address (--nodeport-addresses), loopback included, as in its
	// iptables mode's default: the old pods' check asks 127.0.0.1, vrrpd the node's address.
	setLocalEndpoints(t, ns, "local", endpointNode)
	for _, h := range nodes {
		startKubeProxy(t, h, "--nodeport-addresses=0.0.0.0/0")
	}
	for _, h := range nodes {
		waitKubeProxyHealth(t, h, hcPort, h.Name == endpointNode)
	}

	oldPass := ""
	if password {
		oldPass = pass
	}
	old := oldoperator.Objects(g, "")
	oldDS := old[0].(*appsv1.DaemonSet)
	var podRefs []oldoperator.PodRef
	for _, h := range nodes {
		podRefs = append(podRefs, oldoperator.PodRef{Name: oldoperator.Pod(oldDS, h.Name).Name, HostIP: h.Addr4})
	}
	conf, err := oldoperator.Conf(g, svcs, oldPass, podRefs)
	if err != nil {
		t.Fatal(err)
	}
	old[1].(*corev1.ConfigMap).Data["keepalived.conf"] = conf
	for _, o := range old {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create old %T: %v", o, err)
		}
	}
	var pods []*corev1.Pod
	for _, h := range nodes {
		p := oldoperator.Pod(oldDS, h.Name)
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	logGroupOnFailure(t, ns)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- keepalived.conf ----\n%s", conf)
		}
	})

	// 3. The old pods: keepalived on every node, with that configuration and the pod's
	// name as its config id, as the old DaemonSet runs it. With their effect: each spread
	// address on its owner (priority 200), the Local Service's address on the node with the
	// endpoint (the others' instances are in FAULT), and every other address on one node.
	confPath := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var keepaliveds []*vrrpdtest.Proc
	for i, h := range nodes {
		keepaliveds = append(keepaliveds, vrrpdtest.StartKeepalived(t, h, confPath, "--config-id="+podRefs[i].Name))
	}
	oneHolder := func() bool {
		for _, v := range vips {
			if len(vrrpdtest.Holders(t, v, nodes...)) != 1 {
				return false
			}
		}
		return true
	}
	oldWant := map[netip.Addr]string{spread[0]: "m1", spread[1]: "m2", local: endpointNode}
	vrrpdtest.WaitFor(t, 30*time.Second, "keepalived electing one master per VIP, spread owners and the endpoint's node", func() bool {
		ok, _ := holdersMatch(t, oldWant, nodes...)
		return ok && oneHolder()
	})
	waitHoldersSettle(t, time.Second, 2*time.Second, "keepalived-operator's placement", oldWant, nodes...)
	for _, v := range vips {
		t.Logf("keepalived-operator's pods: %v on %v", v, vrrpdtest.Holders(t, v, nodes...))
	}

	// From here on: sample every node's addresses, ping every VIP, ask the wire who
	// answers for each.
	smp := startSampler(t, nodes, vips)
	png := startPinger(t, cl, vips)
	arpw := startARPWatch(t, cl, vips)

	// 4. The operator finds the old objects and shadows them.
	dwell := 3 * time.Second
	testoperator.StartWith(t, env.Config, env.Scheme, ns, controller.Options{VrrpdImage: "example.com/vrrpd:e2e", MigrationDwell: dwell})
	vrrpdtest.WaitFor(t, 10*time.Second, "the operator shadowing the old pods", func() bool {
		var cur v1alpha1.KeepalivedGroup
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(g), &cur); err != nil {
			return false
		}
		m := cur.Status.Migration
		return m != nil && m.Phase == v1alpha1.MigrationShadowing && len(cur.Status.Instances) == len(vips)
	})
	var cur v1alpha1.KeepalivedGroup
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(g), &cur); err != nil {
		t.Fatal(err)
	}
	for _, in := range cur.Status.Instances {
		if in.VRID != ids[in.Key] {
			t.Fatalf("instance %s has router ID %d, keepalived-operator's pods run %d", in.Key, in.VRID, ids[in.Key])
		}
	}

	// 5. The kubelets' readiness probes and the DaemonSet controller's status, from
	// vrrpd's own probe socket. No vrrpd runs yet: none is ready, and the operator keeps
	// the old pods whatever the time.
	lds := startLabDaemonSet(t, ns, len(nodes))
	vrrpdtest.WaitFor(t, 10*time.Second, "the DaemonSet's status: 0 of 3 ready", func() bool {
		var ds appsv1.DaemonSet
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: groupName + "-vrrpd"}, &ds) == nil &&
			ds.Status.DesiredNumberScheduled == 3 && ds.Status.NumberReady == 0 && ds.Status.ObservedGeneration == ds.Generation
	})
	time.Sleep(dwell + time.Second)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(oldDS), &appsv1.DaemonSet{}); err != nil {
		t.Fatalf("the old DaemonSet went while no vrrpd was ready: %v", err)
	}

	// 6. vrrpd on every node, as the DaemonSet runs it; it must stay backup while the old
	// pods live.
	args := daemonSetArgs(t, ns)
	environ := []string{"KUBECONFIG=" + vrrpdKubeconfig(t, ns)}
	// The kubelet's Secret volume: the password as a file in its place.
	passFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(passFile, []byte(pass), 0o400); err != nil {
		t.Fatal(err)
	}
	daemons := map[string]*vrrpd{}
	for _, h := range nodes {
		dir := vrrpdtest.NewStateDir(t)
		daemons[h.Name] = startVrrpd(t, h, environ, nodeArgs(args, h.Name, dir, "/etc/vrrpd/password/password", passFile)...)
		lds.started(h.Name, dir)
	}
	waitInstances(t, daemons, "the shadow instances", len(vips), func(_ string, in metrics.InstanceStatus) bool {
		return in.Version == 2 && in.State == "BACKUP" && in.BasePriority < 100
	})
	// Longer than Master_Down_Interval: silence from the old master on its own node
	// makes no vrrpd master.
	time.Sleep(oldMasterDown + 500*time.Millisecond)
	for name, d := range daemons {
		st, err := d.status()
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range st.Instances {
			if in.State != "BACKUP" {
				t.Fatalf("vrrpd on %s: %s is %s while the old pods run", name, in.Name, in.State)
			}
		}
	}

	// 7. Once vrrpd's probe says ready on every node (and has for the dwell), the operator
	// deletes the old objects; the garbage collector and the kubelets stop the old pods.
	vrrpdtest.WaitFor(t, dwell+30*time.Second, "the operator deleting the old DaemonSet", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(oldDS), &appsv1.DaemonSet{}))
	})
	deletedAt := time.Now()
	readyAt, ok := lds.allReadySince()
	switch {
	case !ok:
		t.Fatal("the operator deleted the old DaemonSet while vrrpd's probe did not say ready on every node")
	case deletedAt.Sub(readyAt) < dwell:
		t.Fatalf("the operator deleted the old DaemonSet %v after vrrpd's probes said ready, before the dwell %v", deletedAt.Sub(readyAt), dwell)
	}
	t.Logf("vrrpd's probes ready on every node; the operator deleted the old DaemonSet %v later", deletedAt.Sub(readyAt).Round(time.Millisecond))
	stopAt := time.Now()
	for _, k := range keepaliveds {
		k.MustSignal(t, syscall.SIGTERM)
	}
	for _, k := range keepaliveds {
		if err := k.Wait(10 * time.Second); err != nil {
			t.Errorf("%s: %v", k.Name, err)
		}
	}
	for _, p := range pods {
		if err := k8s.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	vrrpdtest.WaitFor(t, 5*time.Second, "vrrpd holding every VIP after the old pods stopped", oneHolder)
	t.Logf("vrrpd holds every VIP %v after the old pods got SIGTERM", time.Since(stopAt).Round(time.Millisecond))

	// 8. The operator settles and moves the group to its own settings. PerService: an
	// instance per VIP, each with the router ID keepalived-operator gave it. Shared (the
	// default): the takeover's per-Service instances convert to shared routers, a router
	// at a time (controller/sharingmoves.go), until every VIP but the Local Service's is
	// in a shared router (an "@" key) and in one instance only.
	vrrpdtest.WaitFor(t, dwell+15*time.Second, "the takeover to end", func() bool {
		var cur v1alpha1.KeepalivedGroup
		return k8s.Get(ctx, client.ObjectKeyFromObject(g), &cur) == nil && cur.Status.Migration == nil
	})
	if sharing == v1alpha1.RouterSharingPerService {
		vrrpdtest.WaitFor(t, 15*time.Second, "an instance per VIP", func() bool {
			return k8s.Get(ctx, client.ObjectKeyFromObject(g), &cur) == nil && len(cur.Status.Instances) == len(vips)
		})
		for _, in := range cur.Status.Instances {
			if in.VRID != ids[in.Key] {
				t.Errorf("after the takeover, instance %s has router ID %d; keepalived-operator's pods ran %d", in.Key, in.VRID, ids[in.Key])
			}
		}
	} else {
		convertedAt := time.Now()
		vrrpdtest.WaitFor(t, 3*time.Minute, "the conversion to shared routers", func() bool {
			if k8s.Get(ctx, client.ObjectKeyFromObject(g), &cur) != nil {
				return false
			}
			listed := map[string]int{}
			for _, in := range cur.Status.Instances {
				if !strings.HasPrefix(in.Key, "@") && in.Key != ns+"/local" {
					return false
				}
				for _, v := range in.VIPs {
					listed[v]++
				}
			}
			for _, v := range vips {
				if listed[v.String()] != 1 {
					return false
				}
			}
			return len(listed) == len(vips)
		})
		t.Logf("converted to %d instances (shared routers and the Local Service's) %v after the takeover ended",
			len(cur.Status.Instances), time.Since(convertedAt).Round(time.Millisecond))
		// Every instance is a shared router or the Local Service's (the wait above). Whether
		// two of the five others share one depends on where rendezvous hashing ranks them
		// in this run's namespace: five Services land in five of the six (first, second)
		// orders of three nodes one run in eleven, and a clean-clone run did. Logged, not
		// asserted.
		t.Logf("%d instances after the conversion for %d VIPs", len(cur.Status.Instances), len(vips))
	}
	wantVersion := 3
	if password {
		wantVersion = 2
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(g), &cur); err != nil {
		t.Fatal(err)
	}
	// Each node's own priority for each instance, from the status (the placement's, no
	// longer the shadow's 99, 91, 83), and the master each VIP should end on: the
	// placement's, but the Local Service's address stays on the node with its endpoint
	// (vrrpd's kube-proxy check puts the others at priority 1).
	own := map[string]uint8{} // node + " " + instance key
	want := map[netip.Addr]string{}
	for _, in := range cur.Status.Instances {
		prios, err := v1alpha1.DecodePriorities(in.Priorities, len(cur.Status.Nodes))
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range prios {
			own[cur.Status.Nodes[i].Name+" "+in.Key] = p
			if p == v1alpha1.PriorityHighest {
				for _, v := range in.VIPs {
					want[netip.MustParseAddr(v)] = cur.Status.Nodes[i].Name
				}
			}
		}
	}
	t.Logf("the placement puts the Local Service's address on %s; its endpoint is on %s", want[local], endpointNode)
	want[local] = endpointNode
	waitInstances(t, daemons, "the group's own settings", len(cur.Status.Instances), func(node string, in metrics.InstanceStatus) bool {
		p, ok := own[node+" "+in.Name]
		return ok && in.Version == wantVersion && in.BasePriority == p
	})
	// The placement's masters take their VIPs (preemption, a few seconds), then stay.
	waitHoldersSettle(t, 2*oldMasterDown+2*time.Second, 2*time.Second, "the placement's masters hold the VIPs", want, nodes...)

	// 9. The record.
	samples, doubles, worstHole := smp.stop()
	pings := png.stop()
	wire, werr := arpw.stop()
	if werr != nil {
		t.Errorf("ARP watch: %v", werr)
	}
	t.Logf("address samples: %d (every node, %.1f ms apart on average); samples with a VIP on two nodes: %d",
		samples.n, float64(samples.span.Microseconds())/1000/float64(max(samples.n, 1)), len(doubles))
	macOf := hostMACs(t, nodes...)
	for _, v := range vips {
		w := wire[v]
		var answered []string
		for _, m := range w.macs {
			answered = append(answered, macOf[m])
		}
		for _, c := range w.changes {
			t.Logf("%v: the answering MAC changed from %s to %s at %s", v, macOf[c.from], macOf[c.to], c.at.Format("15:04:05.000"))
		}
		t.Logf("%v: longest without a holder (sampled) %v; without an echo reply %v (%d sent, %d answered); "+
			"on the wire: %d ARP requests, %d answered, by %v, answering MAC changed %d times, longest without an ARP reply %v, %d gratuitous ARPs, %d requests answered by two MACs",
			v, worstHole[v].Round(time.Millisecond), pings[v].worst.Round(time.Millisecond), pings[v].sent, pings[v].answered,
			w.rounds, w.answered, answered, w.moves, w.longest.Round(time.Millisecond), w.garps, len(w.doubles))
	}
	// The Local Service's address answered from a node without its endpoint, where
	// kube-proxy drops the Service's traffic: during the takeover the vrrpd on the
	// endpoint's node cannot hear its own node's keepalived hand over, so another node
	// takes the address until the group's own settings let the endpoint's node preempt.
	var away time.Duration
	var awaySince time.Time
	for _, c := range wire[local].changes {
		switch {
		case macOf[c.to] != endpointNode && awaySince.IsZero():
			awaySince = c.at
		case macOf[c.to] == endpointNode && !awaySince.IsZero():
			away += c.at.Sub(awaySince)
			awaySince = time.Time{}
		}
	}
	t.Logf("%v (externalTrafficPolicy: Local) answered from a node without its endpoint for %v", local, away.Round(time.Millisecond))
	if !awaySince.IsZero() {
		t.Errorf("%v still answered from a node without its endpoint at the end", local)
	}
	if samples.n < 500 {
		t.Errorf("only %d address samples; the sampler did not keep up", samples.n)
	}
	for _, d := range doubles {
		t.Errorf("two holders: %s", d)
	}
	for _, v := range vips {
		if worstHole[v] > oldMasterDown {
			t.Errorf("%v had no holder for %v, more than the old pods' Master_Down_Interval %v", v, worstHole[v], oldMasterDown)
		}
		if pings[v].worst > oldMasterDown {
			t.Errorf("%v answered no echo for %v, more than the old pods' Master_Down_Interval %v", v, pings[v].worst, oldMasterDown)
		}
		if pings[v].answered == 0 {
			t.Errorf("%v never answered", v)
		}
		w := wire[v]
		for _, d := range w.doubles {
			t.Logf("%v: one ARP request answered by two MACs (not an overlap by itself: see arpWatch) at %s", v, d)
		}
		for _, f := range w.flips {
			t.Errorf("%v: the answering MAC changed back and forth within a second: to %s at %s", v, macOf[f.to], f.at.Format("15:04:05.000"))
		}
		if w.rounds < 500 || w.answered < w.rounds/2 {
			t.Errorf("%v: %d of %d ARP requests answered; the watch did not keep up or the VIP went unanswered", v, w.answered, w.rounds)
		}
		if w.longest > oldMasterDown {
			t.Errorf("%v: no ARP reply for %v, more than the old pods' Master_Down_Interval %v", v, w.longest, oldMasterDown)
		}
		if len(w.macs) == 0 {
			t.Errorf("%v: no ARP reply at all", v)
		}
	}
}

// sampler reads every node's addresses in a loop, about every 10 ms, and records any
// sample in which a VIP is on more than one node, and per VIP the longest stretch of
// samples in which no node held it.
type sampler struct {
	done chan struct{}
	wg   sync.WaitGroup

	n       int
	span    time.Duration
	doubles []string
	worst   map[netip.Addr]time.Duration
	err     error
}

type sampleCount struct {
	n    int
	span time.Duration
}

func startSampler(t *testing.T, nodes []*netlab.Host, vips []netip.Addr) *sampler {
	t.Helper()
	var hs []nodeAddrs
	for _, h := range nodes {
		nh, err := h.Netlink()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nh.Close)
		link, err := nh.LinkByName(h.Link)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, nodeAddrs{h.Name, func() ([]netip.Addr, error) {
			as, err := nh.AddrList(link, syscall.AF_INET)
			if err != nil {
				return nil, err
			}
			return netlinkAddrs(as), nil
		}})
	}
	s := &sampler{done: make(chan struct{}), worst: map[netip.Addr]time.Duration{}}
	lastHeld := map[netip.Addr]time.Time{}
	start := time.Now()
	for _, v := range vips {
		lastHeld[v] = start
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				s.span = time.Since(start)
				return
			case <-tick.C:
			}
			now := time.Now()
			holders := map[netip.Addr][]string{}
			for _, h := range hs {
				addrs, err := h.list()
				if err != nil {
					s.err = fmt.Errorf("%s: %w", h.name, err)
					continue
				}
				for _, a := range addrs {
					holders[a] = append(holders[a], h.name)
				}
			}
			s.n++
			for _, v := range vips {
				if len(holders[v]) > 1 {
					holders[v] = stillHolding(hs, holders[v], v)
				}
				switch hs := holders[v]; {
				case len(hs) > 1:
					s.doubles = append(s.doubles, fmt.Sprintf("%v on %v at %s", v, hs, now.Format("15:04:05.000")))
					lastHeld[v] = now
				case len(hs) == 1:
					lastHeld[v] = now
				default:
					s.worst[v] = max(s.worst[v], now.Sub(lastHeld[v]))
				}
			}
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

// nodeAddrs reads one lab node's IPv4 addresses.
type nodeAddrs struct {
	name string
	list func() ([]netip.Addr, error)
}

// stillHolding reads again the nodes a round saw holding v and keeps those that still
// do. A round reads the nodes one after the other, and on a loaded machine the reads can
// be tens of milliseconds apart: a clean handover (the new master adds its VIPs 50 ms
// after its advertisement made the old one let go) then shows the old master holding v
// early in the round and the new one late. Nodes that both hold v when read again, after
// the round, held it at once. A node that cannot be read keeps its place.
func stillHolding(hs []nodeAddrs, names []string, v netip.Addr) []string {
	var out []string
	for _, h := range hs {
		if !slices.Contains(names, h.name) {
			continue
		}
		addrs, err := h.list()
		if err != nil || slices.Contains(addrs, v) {
			out = append(out, h.name)
		}
	}
	return out
}

// stop ends the sampling (once) and returns what it found.
func (s *sampler) stop() (sampleCount, []string, map[netip.Addr]time.Duration) {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
	return sampleCount{s.n, s.span}, s.doubles, s.worst
}

// pinger sends an ICMP echo request to every VIP every 10 ms from a lab host and records,
// per VIP, the longest time between two replies (or from the start to the first one).
type pinger struct {
	done  chan struct{}
	wg    sync.WaitGroup
	conn  net.PacketConn
	mu    sync.Mutex
	stats map[netip.Addr]*pingStats
	start time.Time
}

type pingStats struct {
	sent, answered int
	last           time.Time
	worst          time.Duration
}

func startPinger(t *testing.T, h *netlab.Host, vips []netip.Addr) *pinger {
	t.Helper()
	p := &pinger{done: make(chan struct{}), stats: map[netip.Addr]*pingStats{}, start: time.Now()}
	for _, v := range vips {
		p.stats[v] = &pingStats{last: p.start}
	}
	if err := h.Do(func() error {
		var err error
		p.conn, err = net.ListenPacket("ip4:icmp", "0.0.0.0")
		return err
	}); err != nil {
		t.Fatalf("ICMP socket in %s: %v", h.Name, err)
	}
	id := os.Getpid() & 0xffff
	p.wg.Add(2)
	go func() { // sender
		defer p.wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			msg := echoRequest(id, seq&0xffff)
			for _, v := range vips {
				if _, err := p.conn.WriteTo(msg, &net.IPAddr{IP: v.AsSlice()}); err == nil {
					p.mu.Lock()
					p.stats[v].sent++
					p.mu.Unlock()
				}
			}
		}
	}()
	go func() { // receiver
		defer p.wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := p.conn.ReadFrom(buf)
			if err != nil {
				return // closed
			}
			// IPv4 raw ICMP sockets deliver the ICMP message: type 0 is an echo reply.
			if n < 8 || buf[0] != 0 || int(buf[4])<<8|int(buf[5]) != id {
				continue
			}
			a, ok := netip.AddrFromSlice(from.(*net.IPAddr).IP)
			if !ok {
				continue
			}
			now := time.Now()
			p.mu.Lock()
			if st := p.stats[a.Unmap()]; st != nil {
				st.answered++
				st.worst = max(st.worst, now.Sub(st.last))
				st.last = now
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// stop ends the pinging (once) and returns the statistics, the time since each VIP's last
// reply counted as a gap too.
func (p *pinger) stop() map[netip.Addr]pingStats {
	select {
	case <-p.done:
	default:
		close(p.done)
		time.Sleep(50 * time.Millisecond) // the last replies
		_ = p.conn.Close()
	}
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[netip.Addr]pingStats{}
	now := time.Now()
	for v, st := range p.stats {
		s := *st
		s.worst = max(s.worst, now.Sub(s.last)-50*time.Millisecond)
		out[v] = s
	}
	return out
}

// echoRequest is an ICMP echo request with identifier id and sequence number seq, and its
// checksum (RFC 792).
func echoRequest(id, seq int) []byte {
	b := []byte{8, 0, 0, 0, byte(id >> 8), byte(id), byte(seq >> 8), byte(seq), 'v', 'r', 'r', 'p'}
	var sum uint32
	for i := 0; i < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	cs := ^uint16(sum)
	b[2], b[3] = byte(cs>>8), byte(cs)
	return b
}

// waitInstances waits until every vrrpd runs n instances and each satisfies ok.
func waitInstances(t *testing.T, daemons map[string]*vrrpd, what string, n int, ok func(node string, in metrics.InstanceStatus) bool) {
	t.Helper()
	for name, d := range daemons {
		vrrpdtest.WaitFor(t, 10*time.Second, "vrrpd on "+name+" running "+what, func() bool {
			st, err := d.status()
			if err != nil || len(st.Instances) != n {
				return false
			}
			for _, in := range st.Instances {
				if !ok(name, in) {
					return false
				}
			}
			return true
		})
	}
}
