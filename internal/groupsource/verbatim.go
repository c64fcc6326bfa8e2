package groupsource

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Verbatim keywords come from two places, as in the original operator: the
// group's spec.verbatimConfig went into keepalived's global_defs, a
// Service's verbatimconfig annotation into its vrrp_instance. Who may set
// which keyword is the keyword table's (package keyword, through
// v1alpha1.VerbatimProblem and GlobalKeyword), shared with the operator and
// with keepalived.conf, as is what a keyword does (config.Draft.SetKeyword). The one difference from a file: a
// bad value is a warning, not an error, since one Service's annotation must
// not stop every other VIP of the group from being served.

// globals reads spec.verbatimConfig, keepalived's global_defs keywords, over
// keepalived's defaults and the CRD's default version, 3.
func (t *translator) globals() config.Globals {
	g := config.DefaultGlobals()
	g.SetVersion(vrrp.Version3)
	kv := t.g.Spec.VerbatimConfig
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if owner, why := v1alpha1.GlobalKeyword(k); owner == v1alpha1.OwnerOperator {
			t.warn("", "verbatimConfig %s is ignored: %s", k, why)
			continue
		}
		notes, err := g.SetKeyword(k, strings.Fields(kv[k]))
		t.keywordResult("", "verbatimConfig", k, notes, err)
	}
	return g
}

// verbatim applies settings.verbatim of instance key to d: the keywords a
// Service may set, through the keyword table keepalived.conf uses.
func (t *translator) verbatim(key string, d *config.Draft, kv map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		// The operator drops what a Service may not set; a status written otherwise is
		// held to the same rule, in the keyword table's words.
		if problem := v1alpha1.VerbatimProblem(k, kv[k]); problem != "" {
			t.warn(key, "verbatim %s %s; ignored", k, problem)
			continue
		}
		notes, err := d.SetKeyword(k, strings.Fields(kv[k]))
		t.keywordResult(key, "verbatim", k, notes, err)
	}
}

// keywordResult reports what setting keyword k gave: notes about adjusted
// values, a keyword vrrpd does not implement, or a bad value, ignored.
func (t *translator) keywordResult(key, what, k string, notes []string, err error) {
	for _, n := range notes {
		t.warn(key, "%s %s", what, n)
	}
	switch {
	case errors.Is(err, config.ErrUnknownKeyword):
		t.warn(key, "%s %s is not supported by vrrpd; ignored", what, k)
	case err != nil && strings.HasPrefix(err.Error(), k+" "):
		t.warn(key, "%s %v; ignored", what, err)
	case err != nil:
		t.warn(key, "%s %s: %v; ignored", what, k, err)
	}
}
