package config

// The model of keepalived's trackers beyond scripts (track_interface, track_file,
// vrrp_sync_group), as a resolved Config carries them.

// TrackInterface is an instance's track_interface entry: weight 0 puts the instance in
// FAULT while the interface is down; otherwise the weight counts as a script's does (a
// positive one while up, a negative one while down; reverse turns both around).
type TrackInterface struct {
	Interface string
	Weight    int
	Reverse   bool
}

// TrackFile is an instance's track_file entry: the name of a TrackFileSpec and the
// weight it applies (the entry's own, else the file's).
type TrackFile struct {
	File    string
	Weight  int
	Reverse bool
}

// TrackFileSpec is a track_file block: a file holding a number that, times Weight, is
// added to the priority of the instances tracking it (package track's FileEffect).
type TrackFileSpec struct {
	Name string
	Path string
	// Weight (-254..254, default 1) and Reverse are the defaults of the entries.
	Weight  int
	Reverse bool
	// Init is init_file: the file is created with InitValue when it does not exist, or
	// written over at start when Overwrite is set.
	Init      bool
	InitValue int
	Overwrite bool
	Source    Position
}

// SyncGroup is a vrrp_sync_group: members that change state together. Its trackers are
// already added to each member's; Notify are its hooks, called with GROUP.
type SyncGroup struct {
	Name    string
	Members []string
	Notify  Notify
	Source  Position
}
