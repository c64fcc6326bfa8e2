package main

import (
	"fmt"
	"os"
	"strings"
)

// A prerequisite is a command the demo runs, and where it comes from.
type prerequisite struct {
	command, why, install string
}

// prerequisites checks, before anything starts, what the demo needs from the machine:
// root (network namespaces), the ip command (the lab is made and entered with it), and
// the go command when it must build vrrpd itself. The ping the client sends is an ICMP
// echo in Go (icmp.go), so no ping command is needed. It names every missing piece and
// how to get it, at once. lookPath and euid are exec.LookPath and os.Geteuid but for tests.
func prerequisites(opts Options, lookPath func(string) (string, error), euid int) error {
	var missing []string
	if euid != 0 {
		missing = append(missing, "root: network namespaces need it (sudo make demo)")
	}
	needs := []prerequisite{{"ip", "builds and enters the lab's namespaces, shows neighbour entries", "iproute2 (apt-get install iproute2, dnf install iproute)"}}
	if opts.Vrrpd == "" {
		needs = append(needs, prerequisite{"go", "builds vrrpd", "Go from https://go.dev/dl, or pass --vrrpd PATH"})
	} else if _, err := os.Stat(opts.Vrrpd); err != nil {
		missing = append(missing, fmt.Sprintf("--vrrpd %s: %v", opts.Vrrpd, err))
	}
	for _, n := range needs {
		if _, err := lookPath(n.command); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s): not found; install %s", n.command, n.why, n.install))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the demo cannot run on this machine:\n  - %s", strings.Join(missing, "\n  - "))
}
