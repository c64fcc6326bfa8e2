// Package config is vrrpd's configuration: one model of the virtual routers a host runs,
// and the two file formats that produce it, a native YAML schema and the subset of
// keepalived.conf that vrrpd understands.
//
// Load detects the format from the content, so an admin can point vrrpd at the
// keepalived.conf they already have. Either way the result is a Config whose instances are
// fully resolved: defaults from global_defs (or the YAML defaults) and keepalived's built-in
// defaults are applied, durations are time.Duration and addresses are netip values, so the
// daemon never needs to know where a setting came from.
//
// Problems come back in two kinds. A Warning (an unknown keyword, a value keepalived would
// also adjust, such as an auth_pass longer than 8 characters) names file:line and lets the
// load go on. An Error (a syntax error, a bad number or address, an invalid or duplicate
// instance) names file:line and aborts the whole load: Load returns no Config, so nothing
// of a broken file is ever applied.
package config
