package track

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Insecure reports why a non-root user could change what the script runs, or nil: as
// keepalived's check_security does for enable_script_security, every component of the
// resolved path, the file included, must be owned by root and writable by no group other
// than root's and by no one else. A bare name is looked up in PATH first.
func Insecure(program string) error {
	path := program
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			return err
		}
		path = p
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return err
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no ownership information", p)
		}
		mode := fi.Mode().Perm()
		switch {
		case st.Uid != 0:
			return fmt.Errorf("%s is owned by uid %d, not root", p, st.Uid)
		case st.Gid != 0 && mode&0o020 != 0:
			return fmt.Errorf("%s is writable by group %d", p, st.Gid)
		case mode&0o002 != 0:
			return fmt.Errorf("%s is writable by everyone", p)
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}

// DefaultScriptUser is the user keepalived runs scripts as when script_user is not set,
// if it exists; otherwise root.
const DefaultScriptUser = "keepalived_script"

// LookupCredential returns the credential of "user [group]" (the user's primary group
// when group is empty). A user of uid 0 with group 0 gives nil: no switch needed.
func LookupCredential(name, group string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gidS := u.Gid
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return nil, err
		}
		gidS = g.Gid
	}
	gid, err := strconv.ParseUint(gidS, 10, 32)
	if err != nil {
		return nil, err
	}
	if uid == 0 && gid == 0 {
		return nil, nil
	}
	// Only the one group: the daemon's supplementary groups (root's) must not follow.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
