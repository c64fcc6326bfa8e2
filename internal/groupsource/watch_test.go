package groupsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

func priorityOf(t *testing.T, cfg *config.Config, name string) uint8 {
	t.Helper()
	in, ok := cfg.Instance(name)
	if !ok {
		t.Fatalf("no instance %s in %v", name, names(cfg))
	}
	return in.Priority
}

// wantTranslation checks that u carries what Translate gives for the
// stored group: the watcher adds nothing of its own.
func wantTranslation(t *testing.T, u Update, ns, name, node string, password []byte) {
	t.Helper()
	var g v1alpha1.KeepalivedGroup
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &g); err != nil {
		t.Fatal(err)
	}
	want, _, err := Translate(&g, node, password, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(u.Config, want) || u.ResourceVersion != g.ResourceVersion {
		t.Fatalf("update (rv %s):\n%+v\nwant (rv %s):\n%+v", u.ResourceVersion, u.Config, g.ResourceVersion, want)
	}
}

func TestWatchFollowsGroup(t *testing.T) {
	needAPI(t)
	ns := newNamespace(t, "follow")
	createGroup(t, ns, "edge", testGroup())
	dir := t.TempDir()
	w := startWatch(t, testConfig, Options{Group: types.NamespacedName{Namespace: ns, Name: "edge"}, Node: "a", StateDir: dir})

	u := w.next(t)
	if u.FromCache {
		t.Fatal("first update claims to come from a cache that does not exist")
	}
	wantTranslation(t, u, ns, "edge", "a", nil)
	if len(u.Config.Instances) != 4 || priorityOf(t, u.Config, "default/dual/ipv4") != 254 {
		t.Fatalf("instances %v", names(u.Config))
	}
	e, err := readCache(dir, types.NamespacedName{Namespace: ns, Name: "edge"})
	if err != nil || e == nil || e.Group.ResourceVersion != u.ResourceVersion {
		t.Fatalf("cache after the first update: %+v, %v", e, err)
	}
	if st, err := os.Stat(filepath.Join(dir, CacheFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v, %v", st, err)
	}

	// The operator moves the dual-stack instance's master away from a.
	updateStatus(t, ns, "edge", func(s *v1alpha1.KeepalivedGroupStatus) {
		s.Instances[0].Priorities = v1alpha1.EncodePriorities([]uint8{100, 254, 253})
	})
	u = w.next(t)
	wantTranslation(t, u, ns, "edge", "a", nil)
	if p := priorityOf(t, u.Config, "default/dual/ipv6"); p != 100 {
		t.Fatalf("priority %d after the change, want 100", p)
	}

	// A change that does not touch a's configuration (a label, and b's
	// priority) gives no update: the next update is the one after it.
	var g v1alpha1.KeepalivedGroup
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "edge"}, &g); err != nil {
		t.Fatal(err)
	}
	g.Labels = map[string]string{"touched": "yes"}
	if err := k8s.Update(context.Background(), &g); err != nil {
		t.Fatal(err)
	}
	updateStatus(t, ns, "edge", func(s *v1alpha1.KeepalivedGroupStatus) {
		s.Instances[0].Priorities = v1alpha1.EncodePriorities([]uint8{100, 250, 253})
	})
	updateStatus(t, ns, "edge", func(s *v1alpha1.KeepalivedGroupStatus) {
		s.Instances[2].Priorities = v1alpha1.EncodePriorities([]uint8{0, 0, 254}) // a leaves default/web
	})
	u = w.next(t)
	wantTranslation(t, u, ns, "edge", "a", nil)
	if len(u.Config.Instances) != 3 {
		t.Fatalf("update after a no-op change: instances %v, want a out of default/web", names(u.Config))
	}
	// The cache follows the API's latest group, no-op changes included.
	eventuallyCache(t, dir, ns, "edge", u.ResourceVersion)

	// The group is deleted: no instances, and no cache to bring them back.
	if err := k8s.Delete(context.Background(), &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}}); err != nil {
		t.Fatal(err)
	}
	u = w.next(t)
	if len(u.Config.Instances) != 0 || u.ResourceVersion != "" || u.Config.RouterID != "a" {
		t.Fatalf("after delete: %+v", u)
	}
	eventually(t, func() error {
		if _, err := os.Stat(filepath.Join(dir, CacheFile)); !errors.Is(err, os.ErrNotExist) {
			return errors.New("cache still there after the group was deleted")
		}
		return nil
	})
	if strings.Contains(w.logs.String(), "kubernetes API") {
		t.Errorf("the watch had errors:\n%s", w.logs)
	}
}

// TestWatchCacheWhileAPIAway: a restarted vrrpd whose API server does not
// answer serves the cached group; when the API answers, its group replaces
// the cached one.
func TestWatchCacheWhileAPIAway(t *testing.T) {
	needAPI(t)
	ns := newNamespace(t, "cache")
	key := types.NamespacedName{Namespace: ns, Name: "edge"}
	createGroup(t, ns, "edge", testGroup())
	dir := t.TempDir()

	// A first vrrpd run fills the cache.
	first := startWatch(t, testConfig, Options{Group: key, Node: "c", StateDir: dir})
	u0 := first.next(t)
	if err := first.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop: %v", err)
	}

	// Restart with the API server unreachable (a closed loopback port).
	away := &rest.Config{Host: "http://127.0.0.1:1", Timeout: time.Second}
	second := startWatch(t, away, Options{Group: key, Node: "c", StateDir: dir, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	u := second.next(t)
	if !u.FromCache || !reflect.DeepEqual(u.Config, u0.Config) || u.ResourceVersion != u0.ResourceVersion {
		t.Fatalf("from cache: %+v\nwant the first run's %+v", u, u0)
	}
	// It keeps retrying, with nothing new to say.
	eventually(t, func() error {
		if n := strings.Count(second.logs.String(), `msg="kubernetes API"`); n < 3 {
			return errors.New("fewer than 3 retries logged")
		}
		return nil
	})
	select {
	case u := <-second.updates:
		t.Fatalf("unexpected update while the API is away: %+v", u)
	default:
	}
	if err := second.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop: %v", err)
	}

	// Meanwhile the operator changed c's priorities; the next start serves
	// the cache, then the API's group.
	updateStatus(t, ns, "edge", func(s *v1alpha1.KeepalivedGroupStatus) {
		s.Instances[1].Priorities = v1alpha1.EncodePriorities([]uint8{254, 253, 1})
	})
	third := startWatch(t, testConfig, Options{Group: key, Node: "c", StateDir: dir})
	u = third.next(t)
	if !u.FromCache || !reflect.DeepEqual(u.Config, u0.Config) {
		t.Fatalf("third start, first update: %+v", u)
	}
	u = third.next(t)
	if u.FromCache {
		t.Fatal("second update still from the cache")
	}
	wantTranslation(t, u, ns, "edge", "c", nil)
	if p := priorityOf(t, u.Config, "default/spread/10.99.0.102"); p != 1 {
		t.Fatalf("priority %d, want the API's 1", p)
	}
	eventuallyCache(t, dir, ns, "edge", u.ResourceVersion)

	// A cache of another group is not used.
	other := startWatch(t, away, Options{Group: types.NamespacedName{Namespace: ns, Name: "other"}, Node: "c", StateDir: dir})
	eventually(t, func() error {
		if !strings.Contains(other.logs.String(), "ignoring the cached group") {
			return errors.New("no log about the foreign cache")
		}
		return nil
	})
	select {
	case u := <-other.updates:
		t.Fatalf("update from another group's cache: %+v", u)
	default:
	}
}

// TestWatchWithVrrpdRole runs the watch as the vrrpd ServiceAccount with
// the Role the operator gives it: get/list/watch on its own group by
// resourceNames and nothing else, no Secret at all. The password comes from
// a file, as the kubelet mounts the Secret's key: a new password replaces
// the file the way the kubelet does (a new directory, one symlink switched)
// and takes effect without any change to the group; the cache never holds
// it.
func TestWatchWithVrrpdRole(t *testing.T) {
	needAPI(t)
	ctx := context.Background()
	ns := newNamespace(t, "rbac")
	g := testGroup()
	g.Status.Instances = g.Status.Instances[1:] // IPv4 only, for VRRPv2
	pa := &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "vrrp-pass"}}
	g.Spec.PasswordAuth = pa
	g.Spec.VRRPVersion = 2
	for i := range g.Status.Instances {
		g.Status.Instances[i].Settings.Version = 2
		g.Status.Instances[i].Settings.PasswordAuth = pa
	}
	createGroup(t, ns, "edge", g)
	createGroup(t, ns, "other", testGroup())
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vrrp-pass"}, Data: map[string][]byte{"password": []byte("s3cret")}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vrrpd"}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vrrpd"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"keepalivedgroups"}, ResourceNames: []string{"edge"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vrrpd"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "vrrpd"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "vrrpd"}},
		},
	} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	sa := rest.CopyConfig(testConfig)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":vrrpd"}

	// The Role is really enforced: everything but the group is denied to
	// the ServiceAccount, its password Secret included.
	saClient, err := client.New(sa, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"get the other group":          saClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "other"}, &v1alpha1.KeepalivedGroup{}),
		"list groups without selector": saClient.List(ctx, &v1alpha1.KeepalivedGroupList{}, client.InNamespace(ns)),
		"get the password Secret":      saClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "vrrp-pass"}, &corev1.Secret{}),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}

	vol := newSecretVolume(t, "password", "s3cret\n") // the original operator's Secrets may end in a newline
	dir := t.TempDir()
	w := startWatch(t, sa, Options{Group: types.NamespacedName{Namespace: ns, Name: "edge"}, Node: "b", StateDir: dir,
		PasswordFile: vol.path("password"), PasswordRefresh: 100 * time.Millisecond})
	u := w.next(t)
	wantTranslation(t, u, ns, "edge", "b", []byte("s3cret"))
	for _, in := range u.Config.Instances {
		if in.AuthType != vrrp.AuthSimple || in.AuthPass != "s3cret" || in.Version != vrrp.Version2 {
			t.Fatalf("%s: auth %v %q version %d", in.Name, in.AuthType, in.AuthPass, in.Version)
		}
	}

	// Watch events arrive under the Role, not only the first list.
	updateStatus(t, ns, "edge", func(s *v1alpha1.KeepalivedGroupStatus) {
		s.Instances[0].Priorities = v1alpha1.EncodePriorities([]uint8{254, 10, 253})
	})
	u = w.next(t)
	if p := priorityOf(t, u.Config, "default/spread/10.99.0.102"); p != 10 {
		t.Fatalf("priority %d after the change, want 10", p)
	}

	// A new password takes effect without any change to the group.
	vol.update(t, "password", "n3wpass")
	u = w.next(t)
	if in := u.Config.Instances[0]; in.AuthPass != "n3wpass" {
		t.Fatalf("after the Secret changed: password %q", in.AuthPass)
	}
	if strings.Contains(w.logs.String(), "kubernetes API") || strings.Contains(w.logs.String(), "cannot read the password") {
		t.Errorf("errors under the vrrpd Role:\n%s", w.logs)
	}
	// The cache on the node holds the group, never the password.
	eventuallyCache(t, dir, ns, "edge", u.ResourceVersion)
	data, err := os.ReadFile(filepath.Join(dir, CacheFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{"s3cret", "n3wpass", "czNjcmV0", "bjN3cGFzcw"} { // and their base64
		if strings.Contains(string(data), pw) {
			t.Errorf("the cache holds the password %q", pw)
		}
	}
}

// TestWatchMissingPassword: without its password a VRRPv2 group is not
// applied (no instance runs unauthenticated); once the file exists the
// configuration comes by itself, and a restart from the cache reads the
// file again.
func TestWatchMissingPassword(t *testing.T) {
	needAPI(t)
	ns := newNamespace(t, "nopassword")
	g := testGroup()
	g.Status.Instances = g.Status.Instances[2:]
	pa := &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "later"}, SecretKey: "pw"}
	g.Status.Instances[0].Settings.Version = 2
	g.Status.Instances[0].Settings.PasswordAuth = pa
	createGroup(t, ns, "edge", g)
	key := types.NamespacedName{Namespace: ns, Name: "edge"}
	pwFile := filepath.Join(t.TempDir(), "password")
	dir := t.TempDir()
	w := startWatch(t, testConfig, Options{Group: key, Node: "a", StateDir: dir, PasswordFile: pwFile, PasswordRefresh: time.Hour})
	eventually(t, func() error {
		if !strings.Contains(w.logs.String(), `passwordAuth: no password in Secret later key \"pw\"`) {
			return errors.New("no error about the missing password logged")
		}
		return nil
	})
	if n := strings.Count(w.logs.String(), "cannot read the password"); n != 1 {
		t.Errorf("the missing file logged %d times, want once until it changes", n)
	}
	select {
	case u := <-w.updates:
		t.Fatalf("update without a password: %+v", u)
	default:
	}
	if err := os.WriteFile(pwFile, []byte("finally"), 0o400); err != nil {
		t.Fatal(err)
	}
	// The failed translation is retried with backoff, reading the file
	// again, long before the hourly refresh.
	u := w.next(t)
	if len(u.Config.Instances) != 1 || u.Config.Instances[0].AuthPass != "finally" {
		t.Fatalf("after the password appeared: %+v", u.Config)
	}
	eventuallyCache(t, dir, ns, "edge", u.ResourceVersion)
	if err := w.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop: %v", err)
	}

	// Restarted while the API server is away: the cached group with the
	// password of the file.
	away := &rest.Config{Host: "http://127.0.0.1:1", Timeout: time.Second}
	again := startWatch(t, away, Options{Group: key, Node: "a", StateDir: dir, PasswordFile: pwFile})
	u = again.next(t)
	if !u.FromCache || len(u.Config.Instances) != 1 || u.Config.Instances[0].AuthPass != "finally" {
		t.Fatalf("from the cache: %+v", u)
	}

	// A file too big to be a password is refused.
	if err := os.WriteFile(pwFile, make([]byte, maxPasswordFile+1), 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := readPasswordFile(pwFile); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("oversized file: %v", err)
	}
}

// secretVolume lays out a directory as the kubelet lays out a Secret
// volume: each key a symlink through ..data to a timestamped directory,
// updated by writing a new directory and renaming a new ..data symlink over
// the old one.
type secretVolume struct {
	dir string
	gen int
}

func newSecretVolume(t *testing.T, key, value string) *secretVolume {
	t.Helper()
	v := &secretVolume{dir: t.TempDir()}
	v.update(t, key, value)
	if err := os.Symlink(filepath.Join("..data", key), filepath.Join(v.dir, key)); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v *secretVolume) path(key string) string { return filepath.Join(v.dir, key) }

func (v *secretVolume) update(t *testing.T, key, value string) {
	t.Helper()
	v.gen++
	ts := fmt.Sprintf("..2026_11_23_%d", v.gen)
	if err := os.Mkdir(filepath.Join(v.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.dir, ts, key), []byte(value), 0o400); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

func eventuallyCache(t *testing.T, dir, ns, name, rv string) {
	t.Helper()
	eventually(t, func() error {
		e, err := readCache(dir, types.NamespacedName{Namespace: ns, Name: name})
		if err != nil {
			return err
		}
		if e == nil || e.Group.ResourceVersion != rv {
			return errors.New("cache does not hold resourceVersion " + rv)
		}
		return nil
	})
}

func eventually(t *testing.T, cond func() error) {
	t.Helper()
	poll.Until(t, 20*time.Second, cond)
}

// TestWatchExpiredResourceVersion: a watch from a resourceVersion the API
// server no longer has ends in errRelist, which run answers with a new
// list at once rather than a backoff.
func TestWatchExpiredResourceVersion(t *testing.T) {
	needAPI(t)
	ns := newNamespace(t, "expired")
	createGroup(t, ns, "edge", testGroup())
	w, err := newWatcher(testConfig, Options{Group: types.NamespacedName{Namespace: ns, Name: "edge"}, Node: "a", OnChange: func(Update) {}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wi, err := w.watchFrom(ctx, "1")
	if err == nil {
		_, _, err = w.consume(ctx, wi, "1")
		wi.Stop()
	}
	if !errors.Is(err, errRelist) {
		t.Fatalf("watch from resourceVersion 1: %v, want errRelist", err)
	}
}

// TestWatchBacksOff: with a Role that lets vrrpd list its group but not
// watch it, the listed configuration is served once and the retries slow
// down exponentially instead of hammering the API server.
func TestWatchBacksOff(t *testing.T) {
	needAPI(t)
	ctx := context.Background()
	ns := newNamespace(t, "backoff")
	createGroup(t, ns, "edge", testGroup())
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vrrpd"}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vrrpd"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"keepalivedgroups"}, ResourceNames: []string{"edge"}, Verbs: []string{"get", "list"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vrrpd"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "vrrpd"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "vrrpd"}},
		},
	} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	sa := rest.CopyConfig(testConfig)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":vrrpd"}
	w := startWatch(t, sa, Options{Group: types.NamespacedName{Namespace: ns, Name: "edge"}, Node: "a", MinBackoff: 20 * time.Millisecond, MaxBackoff: 400 * time.Millisecond})
	wantTranslation(t, w.next(t), ns, "edge", "a", nil)

	retry := regexp.MustCompile(`msg="kubernetes API" .*forbidden.* retry_in=(\S+)`)
	var delays []time.Duration
	eventually(t, func() error {
		delays = delays[:0]
		for _, m := range retry.FindAllStringSubmatch(w.logs.String(), -1) {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				return err
			}
			delays = append(delays, d)
		}
		if len(delays) < 5 {
			return fmt.Errorf("%d forbidden watches retried so far", len(delays))
		}
		return nil
	})
	// 20ms doubling, less up to 20% jitter: 16-20, 32-40, 64-80, 128-160, 256-320.
	for i, d := range delays[:5] {
		lo, hi := time.Duration(16<<i)*time.Millisecond, time.Duration(20<<i)*time.Millisecond
		if d < lo || d > hi {
			t.Errorf("retry %d after %v, want %v..%v (all: %v)", i+1, d, lo, hi, delays)
		}
	}
	select {
	case u := <-w.updates:
		t.Fatalf("a relist of an unchanged group gave an update: %+v", u)
	default:
	}
}

// TestWatchMulticastVIPDropsOneInstance: a status with a multicast VIP in one instance
// (the API server takes it; an older operator wrote it) gives every member node its other
// instances, with a warning naming the dropped one, instead of no configuration at all.
func TestWatchMulticastVIPDropsOneInstance(t *testing.T) {
	needAPI(t)
	ns := newNamespace(t, "mcast")
	g := testGroup()
	g.Status.Instances[0].VIPs = []string{"10.99.0.100", "239.1.2.3"} // default/dual
	createGroup(t, ns, "edge", g)
	for _, node := range []string{"a", "b", "c"} {
		w := startWatch(t, testConfig, Options{Group: types.NamespacedName{Namespace: ns, Name: "edge"}, Node: node, StateDir: t.TempDir()})
		u := w.next(t)
		wantTranslation(t, u, ns, "edge", node, nil)
		var got []string
		for _, in := range u.Config.Instances {
			if strings.HasPrefix(in.Name, "default/dual") {
				t.Errorf("%s runs %s, whose status has a multicast VIP", node, in.Name)
			}
			got = append(got, in.Name)
		}
		if want := map[string]int{"a": 2, "b": 1, "c": 2}[node]; len(got) != want {
			t.Errorf("%s runs %v, want the group's %d other instances", node, got, want)
		}
		if !warned(u.Warnings, "(default/dual) instance dropped") || !strings.Contains(w.logs.String(), "239.1.2.3 is a multicast address") {
			t.Errorf("%s: no warning about the dropped instance: %v", node, u.Warnings)
		}
	}
}
