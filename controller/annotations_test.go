package controller

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestParseGroupRef: every malformed value is an error naming the problem,
// never a panic (the original's issue 132).
func TestParseGroupRef(t *testing.T) {
	for _, s := range []string{"", "nogroup", "/", "ns/", "/name", "a/b/c", "NS/name", "ns/Name_x", strings.Repeat("n", 64) + "/x"} {
		if ref, err := parseGroupRef(s); err == nil {
			t.Errorf("%q parsed as %v", s, ref)
		} else if !strings.Contains(err.Error(), v1alpha1.AnnotationGroup) {
			t.Errorf("%q: error %q does not name the annotation", s, err)
		}
	}
	ref, err := parseGroupRef("keepalived-operator/keepalivedgroup-router")
	if err != nil || ref.Namespace != "keepalived-operator" || ref.Name != "keepalivedgroup-router" {
		t.Fatalf("good value: %v %v", ref, err)
	}
}

func TestParseVerbatim(t *testing.T) {
	cases := []struct {
		in       string
		want     map[string]string
		problems []string
	}{
		{`{ "track_src_ip": "" }`, map[string]string{"track_src_ip": ""}, nil},
		{`{"garp_master_delay": "5", "bogus_key": "1"}`, map[string]string{"garp_master_delay": "5"}, []string{`key "bogus_key" is not a keepalived vrrp_instance keyword`}},
		{`{"priority": "200"}`, nil, []string{`key "priority" is set by the operator`}},
		{`{not json`, nil, []string{"is not a JSON object of strings"}},
		{`{"track_src_ip": 1}`, nil, []string{"is not a JSON object of strings"}},
		{``, nil, nil},
		// The API's keyword table decides: interval and unicast are the
		// operator's, scripts are refused, mcast_dst_ip is the Service's.
		{`{"advert_int": "2", "unicast_src_ip": "10.0.0.1", "mcast_dst_ip": "224.0.0.19"}`, map[string]string{"mcast_dst_ip": "224.0.0.19"},
			[]string{`key "advert_int" is set by the operator`, `key "unicast_src_ip" is set by the operator`}},
		{`{"notify_master": "/bin/sh -c reboot"}`, nil, []string{`key "notify_master" would run a program`}},
		// use_vmac and vmac_xmit_base are the group's (spec.useVMAC, spec.vmacXmitBase):
		// they change the member nodes' interfaces (issue 27).
		{`{"use_vmac": "", "accept": ""}`, map[string]string{"accept": ""}, []string{`key "use_vmac" is the group's decision (spec.useVMAC of the KeepalivedGroup)`}},
		{`{"use_vmac": "vrrp.7 00:00:5e:00:01:07"}`, nil, []string{`key "use_vmac" is the group's decision`}},
		{`{"vmac_xmit_base": ""}`, nil, []string{`key "vmac_xmit_base" is the group's decision (spec.vmacXmitBase of the KeepalivedGroup)`}},
	}
	for _, tc := range cases {
		got, problems := parseVerbatim(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.in, got, tc.want)
		}
		if len(problems) != len(tc.problems) {
			t.Errorf("%s: problems %q, want %q", tc.in, problems, tc.problems)
			continue
		}
		for i, p := range tc.problems {
			if !strings.Contains(problems[i], p) {
				t.Errorf("%s: problem %q does not contain %q", tc.in, problems[i], p)
			}
		}
	}
}

// TestBadAnnotationsAreEventsOnly: a malformed group annotation, bad
// verbatimconfig JSON, an unknown verbatim key and a missing group each give
// an Event naming the problem; the operator keeps serving everything else
// (a good Service in the same group gets its VIP, and the Service with
// bad verbatim keys still gets its VIP, in a router whose settings are its
// verbatim keys without the bad ones). The group has the default sharing, so
// the routers are shared: bad-json (every key dropped) is of the default
// class like good, bad-key of a class of its own.
func TestBadAnnotationsAreEventsOnly(t *testing.T) {
	ns := newNamespace(t, "annot")
	newGroup(t, ns, "g", nil)
	ann := func(k, v string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Annotations[k] = v; s.Spec.ExternalIPs = []string{"10.99.0.50"} }
	}
	newService(t, ns, "no-slash", "nogroup", withExternalIPs("10.99.0.51"))
	newService(t, ns, "three-parts", "a/b/c", withExternalIPs("10.99.0.52"))
	newService(t, ns, "bad-json", ns+"/g", ann(v1alpha1.AnnotationVerbatimConfig, "{not json"))
	newService(t, ns, "bad-key", ns+"/g", func(s *corev1.Service) {
		s.Annotations[v1alpha1.AnnotationVerbatimConfig] = `{"bogus_key": "1", "track_src_ip": ""}`
		s.Spec.ExternalIPs = []string{"10.99.0.53"}
	})
	newService(t, ns, "missing", ns+"/nope", withExternalIPs("10.99.0.54"))
	newService(t, ns, "good", ns+"/g", withExternalIPs("10.99.0.55"))
	startManager(t, ns)

	eventually(t, 20*time.Second, func() error {
		want := map[string]string{
			"no-slash":    `"nogroup": want <namespace>/<name>`,
			"three-parts": `name "b/c"`,
			"bad-json":    "is not a JSON object of strings",
			"bad-key":     `key "bogus_key" is not a keepalived vrrp_instance keyword`,
		}
		invalid := serviceEvents(t, ns, ReasonInvalidAnnotation)
		for name, text := range want {
			if len(invalid[name]) != 1 || !strings.Contains(invalid[name][0].Note, text) {
				return fmt.Errorf("%s: InvalidAnnotation events %v, want one containing %q", name, invalid[name], text)
			}
		}
		if len(invalid) != len(want) {
			return fmt.Errorf("InvalidAnnotation on %d Services, want %d", len(invalid), len(want))
		}
		nf := serviceEvents(t, ns, ReasonGroupNotFound)["missing"]
		if len(nf) != 1 || !strings.Contains(nf[0].Note, "KeepalivedGroup "+ns+"/nope named by") {
			return fmt.Errorf("missing: GroupNotFound events %v", nf)
		}
		return nil
	})
	eventually(t, 20*time.Second, func() error {
		g := getGroup(t, ns, "g")
		ids := g.Status.RouterIDs
		if len(ids) != 3 || ids[ns+"/bad-json"] == 0 || ids[ns+"/bad-key"] == 0 || ids[ns+"/good"] == 0 {
			return fmt.Errorf("routerIDs %v, want bad-json, bad-key and good", ids)
		}
		if ids[ns+"/bad-key"] == ids[ns+"/good"] || ids[ns+"/bad-key"] == ids[ns+"/bad-json"] {
			return fmt.Errorf("routerIDs %v: bad-key shares a router with a Service of other settings", ids)
		}
		want := map[string]struct {
			vip  string
			verb map[string]string
		}{
			"bad-json": {"10.99.0.50", nil},
			"bad-key":  {"10.99.0.53", map[string]string{"track_src_ip": ""}},
			"good":     {"10.99.0.55", nil},
		}
		for name, w := range want {
			var in *v1alpha1.Instance
			for i := range g.Status.Instances {
				if g.Status.Instances[i].VRID == ids[ns+"/"+name] {
					in = &g.Status.Instances[i]
				}
			}
			if in == nil || !slices.Contains(in.VIPs, w.vip) {
				return fmt.Errorf("%s: router %d %+v, want one with %s", name, ids[ns+"/"+name], in, w.vip)
			}
			if v := in.Settings.Verbatim; len(v) != len(w.verb) || len(v) > 0 && !reflect.DeepEqual(v, w.verb) {
				return fmt.Errorf("%s verbatim %v, want %v", name, v, w.verb)
			}
		}
		return nil
	})
}

// TestVRRPv2LeavesIPv6Out: VRRPv2 carries IPv4 only; a version 2 group's
// instance keeps the Service's IPv4 VIP, and an Event names the IPv6 one
// left out.
func TestVRRPv2LeavesIPv6Out(t *testing.T) {
	ns := newNamespace(t, "v2")
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) { g.Spec.VRRPVersion = 2 })
	newService(t, ns, "mixed", ns+"/g", withExternalIPs("10.99.0.70", "fd00:99::70"))
	startManager(t, ns)
	eventually(t, 20*time.Second, func() error {
		g := getGroup(t, ns, "g")
		if len(g.Status.Instances) != 1 || !reflect.DeepEqual(g.Status.Instances[0].VIPs, []string{"10.99.0.70"}) || g.Status.Instances[0].Settings.Version != 2 {
			return fmt.Errorf("instances %+v", g.Status.Instances)
		}
		ev := serviceEvents(t, ns, ReasonInvalidAnnotation)["mixed"]
		if len(ev) != 1 || !strings.Contains(ev[0].Note, "VRRPv2, which carries IPv4 only: fd00:99::70 not served") {
			return fmt.Errorf("events %v", ev)
		}
		return nil
	})
}
