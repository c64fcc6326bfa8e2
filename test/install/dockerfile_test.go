package install

import (
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile: there is no image builder here, so the Dockerfile's promises are checked
// by reading it: one native build stage cross-compiling for $TARGETARCH (any platform of
// make cross, without emulation), static binaries, and an operator stage that runs as a
// numeric non-root user (runAsNonRoot can only verify a numeric one).
func TestDockerfile(t *testing.T) {
	stages := map[string][]string{}
	var stage string
	for _, line := range strings.Split(string(readFile(t, "Dockerfile")), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if f := strings.Fields(line); strings.EqualFold(f[0], "FROM") {
			stage = f[len(f)-1]
			stages[stage] = append(stages[stage], line)
			continue
		}
		stages[stage] = append(stages[stage], line)
	}
	build := strings.Join(stages["build"], "\n")
	for _, want := range []string{"FROM --platform=$BUILDPLATFORM ", "ARG TARGETARCH", "CGO_ENABLED=0", "GOARCH=$TARGETARCH", "./cmd/vrrpd", "./cmd/operator"} {
		if !strings.Contains(build, want) {
			t.Errorf("build stage lacks %q", want)
		}
	}
	op := strings.Join(stages["operator"], "\n")
	m := regexp.MustCompile(`(?m)^USER (\d+)(:\d+)?$`).FindStringSubmatch(op)
	if m == nil || m[1] == "0" {
		t.Errorf("operator stage: no numeric non-root USER:\n%s", op)
	}
	if !strings.Contains(op, "COPY --from=build /out/operator") || !strings.Contains(strings.Join(stages["vrrpd"], "\n"), "COPY --from=build /out/vrrpd") {
		t.Error("the runtime stages do not take their binaries from the build stage")
	}
}
