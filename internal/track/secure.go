package track

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/vrrp-operator/vrrp-operator/internal/proc"
)

// maxLinks bounds the symbolic links Resolve follows for one path, as the kernel's
// MAXSYMLINKS (40) bounds a lookup's.
const maxLinks = 40

// Resolved is a script's program as Resolve found it.
type Resolved struct {
	// Path is the file to execute: every symbolic link of the program's path resolved,
	// each step checked. It is what runs, so what was checked is what runs.
	Path string
	// Insecure says why someone other than root (or the script's own user) could change
	// what runs: the first entry on the way that fails keepalived's rules. nil when none.
	Insecure error
}

// Resolve finds the file a script runs and checks every step of the way, as keepalived's
// check_script_secure and check_security do for enable_script_security, and stricter:
//
//   - A bare name is looked up in the scripts' PATH (proc.SearchPath).
//   - Each entry of the path as written is looked at without following it (lstat), from
//     "/" (or the working directory, for a relative path) down: a directory, a symbolic
//     link or, last, the file.
//   - A symbolic link is followed and its target walked the same way (at most 40 links),
//     so both the path as written and the path that is really opened are checked. (keepalived
//     refuses a directory on the way that is a symbolic link, such as /bin on a merged-/usr
//     host; vrrpd checks the link and what it points to instead.)
//   - Every entry must be owned by root, or by the user the script runs as when that is
//     neither uid 0 nor gid 0 (that user gains nothing by changing its own script;
//     keepalived checks no path at all for such a user). A directory or the file must not
//     be writable by a group other than gid 0 or by everyone; a directory with the sticky
//     bit (such as /tmp) may be, as in keepalived, since no one else can then rename or
//     remove the root-owned entry in it. A symbolic link's own mode means nothing.
//   - The last entry must be a regular file.
//
// err is a path that cannot be walked (a missing entry, a loop, a file that is not
// regular): the script cannot be run. Insecure in the result is a path that can be
// walked but fails the ownership or permission rules.
func Resolve(program string, cred *syscall.Credential) (Resolved, error) {
	path, err := proc.LookPath(program)
	if err != nil {
		return Resolved{}, err
	}
	w := walker{owner: ownerOK(cred)}
	cur := "/"
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return Resolved{}, err
		}
		// The working directory is walked too: it is on the way.
		if cur, err = w.walk("/", strings.Split(wd, "/"), true); err != nil {
			return Resolved{}, err
		}
	} else if err := w.check("/"); err != nil {
		return Resolved{}, err
	}
	real, err := w.walk(cur, strings.Split(path, "/"), false)
	if err != nil {
		return Resolved{}, err
	}
	return Resolved{Path: real, Insecure: w.insecure}, nil
}

// walker walks a path entry by entry, noting the first insecure entry.
type walker struct {
	owner    func(uid uint32) bool
	links    int
	insecure error
}

// ownerOK returns which owners a script run as cred may have on its way: root, and the
// script's user when it is not root in uid or gid.
func ownerOK(cred *syscall.Credential) func(uint32) bool {
	return func(uid uint32) bool {
		return uid == 0 || cred != nil && cred.Uid != 0 && cred.Gid != 0 && uid == cred.Uid
	}
}

// walk follows names from the directory cur (an absolute path already walked, with no
// symbolic link in it) and returns where they lead, also with no symbolic link. With dir,
// the end must be a directory; otherwise a regular file.
func (w *walker) walk(cur string, names []string, dir bool) (string, error) {
	file := false
	for len(names) > 0 {
		name := names[0]
		names = names[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			// cur has no links in it, so its parent is what the kernel's ".." is.
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if err := w.check1(next, fi); err != nil {
			return "", err
		}
		last := len(names) == 0
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if w.links++; w.links > maxLinks {
				return "", fmt.Errorf("%s: %w", next, syscall.ELOOP)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			names = append(strings.Split(target, "/"), names...)
		case fi.IsDir():
			if last && !dir {
				return "", fmt.Errorf("%s is a directory", next)
			}
			cur = next
		case last && !dir && fi.Mode().IsRegular():
			cur, file = next, true
		case last && !dir:
			return "", fmt.Errorf("%s is not a regular file", next)
		default:
			return "", fmt.Errorf("%s: %w", next, syscall.ENOTDIR)
		}
	}
	if !dir && !file {
		return "", fmt.Errorf("%s is not a regular file", cur)
	}
	return cur, nil
}

// check checks one entry by its path.
func (w *walker) check(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	return w.check1(p, fi)
}

// check1 notes the first entry that fails the ownership and permission rules. Its error
// is only for entries it cannot judge.
func (w *walker) check1(p string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no ownership information", p)
	}
	if w.insecure != nil {
		return nil
	}
	mode := st.Mode
	sticky := fi.IsDir() && mode&syscall.S_ISVTX != 0
	writable := fi.Mode().IsRegular() || fi.IsDir() && !sticky
	switch {
	case !w.owner(st.Uid):
		w.insecure = fmt.Errorf("%s is owned by uid %d, not root", p, st.Uid)
	case writable && st.Gid != 0 && mode&syscall.S_IWGRP != 0:
		w.insecure = fmt.Errorf("%s is writable by group %d", p, st.Gid)
	case writable && mode&syscall.S_IWOTH != 0:
		w.insecure = fmt.Errorf("%s is writable by everyone", p)
	}
	return nil
}

// ErrNoDefaultUser disables the scripts that name no user when enable_script_security
// is set, script_user is not, and there is no user keepalived_script: keepalived 2.2.7
// refuses to run them as root then.
var ErrNoDefaultUser = errors.New("enable_script_security without script_user, and no user " + DefaultScriptUser + ": not run as root")

// DefaultScriptUser is the user keepalived runs scripts as when script_user is not set,
// if it exists; otherwise root.
const DefaultScriptUser = "keepalived_script"

// LookupCredential returns the credential of "user [group]" (the user's primary group
// when group is empty). A user of uid 0 with group 0 gives nil: no switch needed. An
// unknown user or group is an error: the caller must not run anything then.
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
