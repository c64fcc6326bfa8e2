package vip

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/vishvananda/netlink"

	"github.com/vrrp-operator/vrrp-operator/internal/holdings"
)

// The virtual MAC interfaces' crash record. A macvlan changes its parent's arp_ignore
// and arp_filter (holdParent), which are the node's settings: a vrrpd killed with the
// parent changed would leave the node answering ARP differently for good, and its
// macvlans on the interface. So the parent's values from before the change, and each
// macvlan, are written to vmacs.json in the state directory before the change is made
// (as the VIPs are to vips.json), taken out of it after they are undone, and the next
// vrrpd undoes whatever a crashed one left (VMACs.Recover) before it starts.

// vmacRecordFile holds the parents' original ARP settings and the macvlans this daemon
// made and has not removed yet.
const vmacRecordFile = "vmacs.json"

const vmacRecordVersion = 1

// vmacRecord is the file's content.
type vmacRecord struct {
	Version int `json:"version"`
	// Parents maps a parent interface to its sysctls (ipv4 conf key -> value) from
	// before its first macvlan.
	Parents map[string]map[string]string `json:"parents,omitempty"`
	// MACVLANs are the macvlans made on them, by name.
	MACVLANs map[string]recordedVMAC `json:"macvlans,omitempty"`
}

// recordedVMAC is one macvlan of the record: removed at recovery only if the interface
// of that name is still a macvlan with this MAC, so nothing else of that name is touched.
type recordedVMAC struct {
	Parent string `json:"parent"`
	MAC    string `json:"mac"`
}

func (r *vmacRecord) empty() bool { return len(r.Parents) == 0 && len(r.MACVLANs) == 0 }

// vmacRecordIn is the record in dir (internal/holdings: written atomically, not fsynced,
// as the VIPs' record: a crash of the machine resets the sysctls and drops the
// macvlans).
func vmacRecordIn(dir string) holdings.Record {
	return holdings.Record{Dir: dir, File: vmacRecordFile, Version: vmacRecordVersion, What: "VMAC record"}
}

// readVMACRecord loads the record in dir; a missing or empty file is an empty record.
func readVMACRecord(dir string) (*vmacRecord, error) {
	rec := &vmacRecord{Version: vmacRecordVersion}
	if err := vmacRecordIn(dir).Read(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// write replaces the record in dir, or removes it when it is empty.
func (r *vmacRecord) write(dir string) error {
	if r.empty() {
		err := os.Remove(filepath.Join(dir, vmacRecordFile))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	r.Version = vmacRecordVersion
	return vmacRecordIn(dir).Write(r)
}

// Recovered is what VMACs.Recover undid.
type Recovered struct {
	// MACVLANs are the macvlans removed.
	MACVLANs []string
	// Sysctls are the parents' settings put back, as "iface key=value".
	Sysctls []string
}

// Recover undoes what a previous run of this state directory recorded and did not undo
// (it was killed): it removes its macvlans (those still macvlans with the recorded MAC)
// and puts its parents' arp_ignore and arp_filter back, then empties the record. A
// daemon calls it once at start, before any Up. A parent that is gone is dropped from
// the record: its sysctls went with it, and a new interface of that name starts from the
// kernel's defaults. VMACs without a state directory recover nothing.
func (v *VMACs) Recover() (Recovered, error) {
	var out Recovered
	if v.dir == "" {
		return out, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	rec := v.rec
	if rec.empty() {
		return out, nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(rec.MACVLANs)) {
		m := rec.MACVLANs[name]
		link, err := v.nl.LinkByName(name)
		var nf netlink.LinkNotFoundError
		switch {
		case errors.As(err, &nf):
			delete(rec.MACVLANs, name)
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("vmac %s: %w", name, err))
			continue
		}
		if mv, ok := link.(*netlink.Macvlan); !ok || mv.HardwareAddr.String() != m.MAC {
			delete(rec.MACVLANs, name) // not ours any more: someone else's now
			continue
		}
		if err := v.nl.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("vmac %s: remove: %w", name, err))
			continue
		}
		delete(rec.MACVLANs, name)
		out.MACVLANs = append(out.MACVLANs, name)
	}
	for _, parent := range slices.Sorted(maps.Keys(rec.Parents)) {
		if _, ok := v.parents[parent]; ok {
			continue // held by this run (Recover called late): releaseParent restores it
		}
		if _, err := v.nl.LinkByName(parent); err != nil {
			delete(rec.Parents, parent)
			continue
		}
		var perr []error
		for _, key := range slices.Sorted(maps.Keys(rec.Parents[parent])) {
			val := rec.Parents[parent][key]
			if err := writeSysctl("ipv4", parent, key, val); err != nil {
				perr = append(perr, err)
				continue
			}
			out.Sysctls = append(out.Sysctls, fmt.Sprintf("%s %s=%s", parent, key, val))
		}
		if len(perr) > 0 {
			errs = append(errs, perr...)
			continue
		}
		delete(rec.Parents, parent)
	}
	if err := rec.write(v.dir); err != nil {
		errs = append(errs, fmt.Errorf("VMAC record: %w", err))
	}
	return out, errors.Join(errs...)
}

// recordMACVLAN adds m to the record before the macvlan is made. Call with mu held.
func (v *VMACs) recordMACVLAN(m VMAC) error {
	if v.dir == "" {
		return nil
	}
	if r, ok := v.rec.MACVLANs[m.Name]; ok && r.Parent == m.Parent && r.MAC == m.MAC.String() {
		return nil
	}
	if v.rec.MACVLANs == nil {
		v.rec.MACVLANs = map[string]recordedVMAC{}
	}
	v.rec.MACVLANs[m.Name] = recordedVMAC{Parent: m.Parent, MAC: m.MAC.String()}
	return v.rec.write(v.dir)
}

// forgetMACVLAN drops name from the record after the macvlan is gone. Call with mu held.
func (v *VMACs) forgetMACVLAN(name string) error {
	if v.dir == "" {
		return nil
	}
	if _, ok := v.rec.MACVLANs[name]; !ok {
		return nil
	}
	delete(v.rec.MACVLANs, name)
	return v.rec.write(v.dir)
}
