package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/migrate-from-keepalived.md has a table of the keywords vrrpd reads and ignores:
// it must list exactly the keywords of unsupportedKeywords, each with the same effect the
// warning names.
func TestMigrationGuideListsUnsupportedKeywords(t *testing.T) {
	data, err := os.ReadFile("../../docs/migrate-from-keepalived.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## 2. What vrrpd does not do")
	if !ok {
		t.Fatal("the guide has no section 2 on what vrrpd does not do")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| ([^|]+) \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented[m[1]] = strings.TrimSpace(m[2])
	}
	var missing, extra []string
	for k, u := range unsupportedKeywords {
		effect, ok := documented[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case effect != u.effect:
			t.Errorf("%s: the guide says %q, the warning %q", k, effect, u.effect)
		}
	}
	for k := range documented {
		if _, ok := unsupportedKeywords[k]; !ok {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("guide and table disagree: not in the guide %v, not in the table %v", missing, extra)
	}
}

// Each unsupported keyword is warned about as such, with its effect, wherever it is
// written: a block, a keyword with values, globally or in an instance.
func TestUnsupportedKeywordsWarn(t *testing.T) {
	for k, u := range unsupportedKeywords {
		for _, body := range []string{k + " /bin/true", k + " {\nx\n}"} {
			_, ws, err := Parse("u.conf", []byte(kaConf("", "interface eth0\n"+body)))
			if err != nil {
				t.Errorf("%s: %v", k, err)
				continue
			}
			if len(ws) != 1 || !strings.Contains(ws[0].Message, "is not supported by vrrpd") || !strings.HasSuffix(ws[0].Message, "ignored: "+u.effect) {
				t.Errorf("%q: warnings %v", body, ws)
			}
		}
	}
}
