package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// The default systemd unit (deploy/vrrpd/vrrpd.service) runs vrrpd as a dynamic,
// unprivileged user with CAP_NET_ADMIN and CAP_NET_RAW only, a private /tmp and a
// read-only file system but for /run/vrrpd. That is all vrrpd itself needs, and it breaks
// scripts and files a keepalived.conf may name. vrrpd check cannot know which unit will
// run the file, so it says what the configuration needs that the default unit does not
// give, and where the variant is (deploy/vrrpd/vrrpd-scripts.conf, a drop-in).

// unitRuntimeDir is the one directory the default unit lets vrrpd write.
const unitRuntimeDir = "/run/vrrpd"

// dropIn is how every sandbox warning ends.
const dropIn = "the default systemd unit (vrrpd.service) does not allow this; install deploy/vrrpd/vrrpd-scripts.conf as /etc/systemd/system/vrrpd.service.d/scripts.conf"

// scriptWarnings lists the scripts whose path fails the security check, and what in cfg
// the default unit's sandbox would break. Under a systemd unit that runs vrrpd as root
// (INVOCATION_ID is set: the ExecStartPre of the drop-in's unit) the choice of unit was
// made, and it says nothing of the sandbox.
func scriptWarnings(cfg *config.Config) []config.Warning {
	quiet := os.Getenv("INVOCATION_ID") != "" && os.Geteuid() == 0
	file := config.Position{}
	if len(cfg.Files) > 0 {
		file.File = cfg.Files[0]
	}
	var ws []config.Warning
	warn := func(pos config.Position, format string, a ...any) {
		if !quiet {
			ws = append(ws, config.Warning{Pos: pos, Message: fmt.Sprintf(format, a...) + "; " + dropIn})
		}
	}
	defUser := defaultUserName(cfg.ScriptSettings)
	// Who runs the scripts and hooks: a user needs CAP_SETUID/CAP_SETGID; root needs
	// root. Either way not the dynamic user.
	type run struct {
		what string
		pos  config.Position
		prog string
	}
	byUser := map[string][]run{}
	add := func(what string, pos config.Position, args []string, user string) {
		if len(args) == 0 {
			return
		}
		if user == "" {
			user = defUser
		}
		byUser[user] = append(byUser[user], run{what, pos, args[0]})
		ws = append(ws, securityWarnings(what, pos, args[0], user, cfg.ScriptSettings.Security)...)
	}
	for _, sc := range cfg.Scripts {
		if !sc.IsCheck() {
			add("vrrp_script "+sc.Name, sc.Source, sc.Command, sc.User)
		}
	}
	hooks := func(owner string, pos config.Position, n config.Notify) {
		names := []string{"notify_master", "notify_backup", "notify_fault", "notify_stop", "notify", "notify_deleted"}
		for i, c := range n.Commands() {
			add(owner+" "+names[i], pos, c.Args, c.User)
		}
	}
	for _, in := range cfg.Instances {
		hooks("("+in.Name+")", in.Source, in.Notify)
	}
	for _, sg := range cfg.SyncGroups {
		hooks("vrrp_sync_group "+sg.Name, sg.Source, sg.Notify)
	}
	users := make([]string, 0, len(byUser))
	for u := range byUser {
		users = append(users, u)
	}
	slices.Sort(users)
	for _, u := range users {
		rs := byUser[u]
		what := rs[0].what + " runs"
		if len(rs) > 1 {
			what = fmt.Sprintf("%s and %d more script(s) and hook(s) run", rs[0].what, len(rs)-1)
		}
		if u == "root" {
			warn(rs[0].pos, "%s as root, which under the default unit would be vrrpd's unprivileged dynamic user", what)
		} else {
			warn(rs[0].pos, "%s as user %s, which needs CAP_SETUID and CAP_SETGID (without them each run fails with EPERM)", what, u)
		}
		for _, r := range rs {
			if hidden(r.prog) {
				warn(r.pos, "%s is %s, under /home or /root, which the default unit hides (ProtectHome)", r.what, r.prog)
			}
		}
	}
	for _, p := range []string{cfg.ScriptSettings.NotifyFIFO, cfg.ScriptSettings.VRRPNotifyFIFO} {
		switch {
		case p == "" || under(p, unitRuntimeDir):
		case under(p, "/tmp") || under(p, "/var/tmp"):
			warn(file, "notify FIFO %s: the default unit's /tmp is private (PrivateTmp), so no reader outside would see the FIFO", p)
		default:
			warn(file, "notify FIFO %s: the default unit can create files only under %s (ProtectSystem=strict)", p, unitRuntimeDir)
		}
	}
	for _, f := range cfg.TrackFiles {
		switch {
		case under(f.Path, "/tmp") || under(f.Path, "/var/tmp"):
			warn(file, "track_file %s: %s is in the default unit's private /tmp (PrivateTmp): vrrpd would never see what others write there", f.Name, f.Path)
		case hidden(f.Path):
			warn(file, "track_file %s: %s is under /home or /root, which the default unit hides (ProtectHome)", f.Name, f.Path)
		case f.Init && !under(f.Path, unitRuntimeDir):
			warn(file, "track_file %s: init_file writes %s, and the default unit can write only under %s (ProtectSystem=strict)", f.Name, f.Path, unitRuntimeDir)
		}
	}
	return ws
}

// securityWarnings is what the daemon will say of a script's path (track.Resolve): one
// it cannot walk, or one someone else could change, which enable_script_security refuses.
func securityWarnings(what string, pos config.Position, prog, user string, enforced bool) []config.Warning {
	cred, err := track.LookupCredential(user, "")
	if err != nil {
		return nil // the load has refused an unknown user already; root has none
	}
	r, err := track.Resolve(prog, cred)
	if err == nil {
		err = r.Insecure
	}
	if err == nil {
		return nil
	}
	verdict := "only a warning, without enable_script_security"
	if enforced {
		verdict = "enable_script_security: it will not run"
	}
	return []config.Warning{{Pos: pos, Message: fmt.Sprintf("%s: %v; %s", what, err, verdict)}}
}

// defaultUserName is who runs a script that names no user, as the daemon decides it.
func defaultUserName(s config.ScriptSettings) string {
	switch {
	case s.User != "":
		return s.User
	case knownUser(track.DefaultScriptUser):
		return track.DefaultScriptUser
	}
	return "root"
}

func knownUser(name string) bool {
	_, err := track.LookupCredential(name, "")
	return err == nil
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	p := filepath.Clean(path)
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// hidden reports whether ProtectHome=yes hides path.
func hidden(path string) bool {
	return under(path, "/home") || under(path, "/root") || under(path, "/run/user")
}
