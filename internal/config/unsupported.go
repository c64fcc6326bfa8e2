package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/keyword"
)

// unsupported is a keepalived.conf keyword that keepalived acts on and vrrpd reads but
// does not: a file that uses it runs differently under vrrpd, and the warning says how.
type unsupported struct {
	// yet: issue 9 plans it; without, vrrpd has no plan to do it (a load balancer, mail).
	yet bool
	// effect is what happens instead, for the warning and the migration guide.
	effect string
}

// unsupportedKeywords are the keyword table's entries with what happens instead, global
// or per instance, blocks or not. docs/migrate-from-keepalived.md lists every one with
// what to do instead (a test holds the two together).
var unsupportedKeywords = func() map[string]unsupported {
	m := map[string]unsupported{}
	for _, k := range keyword.UnsupportedNames() {
		effect, yet, _ := keyword.Unsupported(k)
		m[k] = unsupported{yet: yet, effect: effect}
	}
	return m
}()

// unsupportedMessage is the warning for an unsupported keyword (where says in which
// block), or "" if key is not in the table.
func unsupportedMessage(key, where string, block bool) string {
	u, ok := unsupportedKeywords[key]
	if !ok {
		return ""
	}
	what := fmt.Sprintf("%q", key)
	if block {
		what += " block"
	}
	yet := ""
	if u.yet {
		yet = " yet"
	}
	return fmt.Sprintf("%s%s is not supported by vrrpd%s; ignored: %s", what, where, yet, u.effect)
}

// instancePrefix is the "(NAME) " the rules put before a message about one instance.
var instancePrefix = regexp.MustCompile(`^\([^)]*\) `)

// groupWarnings folds repeated warnings into the first: a configuration of 512 instances
// that each use track_script gives one warning with a count, not 512 lines. Warnings
// repeat when they have one group (a keyword in a kind of block), or the same text apart
// from the instance they name.
func groupWarnings(ws []Warning) []Warning {
	var out []Warning
	index := map[string]int{}
	for _, w := range ws {
		key := w.group
		if key == "" {
			key = instancePrefix.ReplaceAllString(w.Message, "")
		}
		if i, ok := index[key]; ok {
			if out[i].Count == 0 {
				out[i].Count = 1
			}
			out[i].Count++
			out[i].Last = w.Pos
			continue
		}
		index[key] = len(out)
		out = append(out, w)
	}
	for i, w := range out {
		if w.Count > 1 {
			out[i].Message = fmt.Sprintf("%s (%d times; the last at %s)", w.Message, w.Count, w.Last)
		}
	}
	return out
}

// blockKind is the kind of block a "where" names ("in vrrp_instance VI_1" is
// "vrrp_instance"), for grouping.
func blockKind(where string) string {
	f := strings.Fields(where)
	if len(f) >= 2 {
		return f[1]
	}
	return ""
}
