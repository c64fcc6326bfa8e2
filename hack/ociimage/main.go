// Command ociimage writes a multi-architecture container image of one static binary as an
// OCI image layout, for make release: there is no registry or Docker engine to build the
// Dockerfile with, so the images are assembled from the binaries make cross built, with
// go-containerregistry (an image per platform on the empty base, their index, the layout),
// and make release tars each layout into an OCI archive, which `skopeo copy
// oci-archive:...`, `docker load` and `ctr images import` read.
//
//	ociimage -out DIR -name REPOSITORY:TAG -path /vrrpd [-user 65532:65532] [-port 9650]
//	         [-label k=v]... [-created RFC3339] linux/amd64=bin/vrrpd-linux-amd64 ...
//
// Each image has one layer, the binary at -path (mode 0755, owned by root) as the
// entrypoint, and nothing else: the binaries are static (CGO_ENABLED=0) and need no libc,
// shell or CA bundle (the operator trusts the service account's CA, vrrpd speaks plain
// HTTP). That is the Dockerfile's distroless/static base minus its files (/etc/passwd,
// CA certificates, tzdata), which neither program reads; the operator's numeric -user is
// what runAsNonRoot verifies without /etc/passwd. Every timestamp is -created, so the same
// binaries give the same digests.
//
// Each binary must be a static ELF executable for its platform's architecture (debug/elf):
// a binary of the wrong architecture in an index entry is an image that fails only on the
// nodes of that architecture.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

// spec is what one image index is built from.
type spec struct {
	// ref is the image's full name, REPOSITORY:TAG.
	ref name.Tag
	// path is where the binary lives in the image, its entrypoint.
	path string
	// user is the config's User ("" runs as the runtime's default, root).
	user string
	// ports are the config's ExposedPorts, as "9650/tcp".
	ports []string
	// labels are the config's Labels (org.opencontainers.image.*).
	labels map[string]string
	// created is every timestamp of the image (config, history, the layer's files).
	created time.Time
	// binaries are the platforms' binaries: "linux/amd64" -> file, in the index's order.
	binaries []platformBinary
}

type platformBinary struct {
	platform v1.Platform
	file     string
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func run(args []string) error {
	fs := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	out := fs.String("out", "", "the OCI image layout directory to write (must not exist, or be empty)")
	ref := fs.String("name", "", "the image's name, REPOSITORY:TAG (annotations io.containerd.image.name and org.opencontainers.image.ref.name)")
	bin := fs.String("path", "", "the binary's absolute path in the image, its entrypoint")
	user := fs.String("user", "", "the config's User, numeric uid:gid (empty: root)")
	created := fs.String("created", "1970-01-01T00:00:00Z", "RFC 3339 time of the config, history and files (the commit's time, for reproducible digests)")
	var ports, labels listFlag
	fs.Var(&ports, "port", "an exposed port, 9650 or 9650/tcp (repeatable)")
	fs.Var(&labels, "label", "a config label k=v (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := parseSpec(*ref, *bin, *user, *created, ports, labels, fs.Args())
	if err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-out is required")
	}
	idx, err := build(s)
	if err != nil {
		return err
	}
	return write(*out, s, idx)
}

func parseSpec(ref, bin, user, created string, ports, labels, binaries []string) (*spec, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("-name %q: want REPOSITORY:TAG: %w", ref, err)
	}
	if !path.IsAbs(bin) || path.Clean(bin) != bin || bin == "/" {
		return nil, fmt.Errorf("-path %q: want an absolute path to a file", bin)
	}
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return nil, fmt.Errorf("-created: %w", err)
	}
	s := &spec{ref: tag, path: bin, user: user, created: t.UTC(), labels: map[string]string{}}
	for _, p := range ports {
		if !strings.Contains(p, "/") {
			p += "/tcp"
		}
		s.ports = append(s.ports, p)
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-label %q: want k=v", l)
		}
		s.labels[k] = v
	}
	if len(binaries) == 0 {
		return nil, errors.New("no PLATFORM=BINARY arguments")
	}
	for _, a := range binaries {
		p, file, ok := strings.Cut(a, "=")
		if !ok || file == "" {
			return nil, fmt.Errorf("%q: want PLATFORM=BINARY, e.g. linux/amd64=bin/vrrpd-linux-amd64", a)
		}
		plat, err := v1.ParsePlatform(p)
		if err != nil || plat.OS == "" || plat.Architecture == "" {
			return nil, fmt.Errorf("%q: platform %q: want OS/ARCH", a, p)
		}
		if slices.ContainsFunc(s.binaries, func(b platformBinary) bool { return b.platform.Equals(*plat) }) {
			return nil, fmt.Errorf("platform %s given twice", p)
		}
		s.binaries = append(s.binaries, platformBinary{platform: *plat, file: file})
	}
	return s, nil
}

// elfMachines are the ELF machine and byte order of each Go architecture make cross builds.
var elfMachines = map[string]struct {
	machine elf.Machine
	order   elf.Data
}{
	"amd64":   {elf.EM_X86_64, elf.ELFDATA2LSB},
	"arm64":   {elf.EM_AARCH64, elf.ELFDATA2LSB},
	"ppc64le": {elf.EM_PPC64, elf.ELFDATA2LSB},
	"s390x":   {elf.EM_S390, elf.ELFDATA2MSB},
}

// checkBinary refuses a file that is not a static ELF executable of the platform's
// architecture: one with an interpreter (a cgo build) would not start in an image
// without libc.
func checkBinary(file string, p v1.Platform) error {
	want, ok := elfMachines[p.Architecture]
	if !ok || p.OS != "linux" {
		return fmt.Errorf("%s: platform %s: want linux/amd64, arm64, ppc64le or s390x", file, p.String())
	}
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	defer f.Close()
	// ET_DYN too: a static PIE has no interpreter either.
	if f.Machine != want.machine || f.Data != want.order || (f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN) {
		return fmt.Errorf("%s: an ELF %s %s %s, not an executable for %s", file, f.Type, f.Machine, f.Data, p.String())
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s: dynamically linked (build it with CGO_ENABLED=0)", file)
		}
	}
	return nil
}

// build returns the image index: one image per binary.
func build(s *spec) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range s.binaries {
		if err := checkBinary(b.file, b.platform); err != nil {
			return nil, err
		}
		img, err := image(s, b)
		if err != nil {
			return nil, err
		}
		p := b.platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, nil
}

// image is one platform's image: the binary as its one layer and entrypoint.
func image(s *spec, b platformBinary) (v1.Image, error) {
	data, err := os.ReadFile(b.file)
	if err != nil {
		return nil, err
	}
	// The layer's tar stream, through archive/tar: one regular file, root's, 0755.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: strings.TrimPrefix(s.path, "/"), Size: int64(len(data)),
		Mode: 0o755, ModTime: s.created, Format: tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerTar := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}

	cfg := v1.Config{Entrypoint: []string{s.path}, User: s.user, Labels: s.labels}
	if len(s.ports) > 0 {
		cfg.ExposedPorts = map[string]struct{}{}
		for _, p := range s.ports {
			cfg.ExposedPorts[p] = struct{}{}
		}
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	// The empty image's config (rootfs of type layers, no history) with ours on top.
	cf, err := base.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Variant = b.platform.Architecture, b.platform.OS, b.platform.Variant
	cf.Created = v1.Time{Time: s.created}
	cf.Config = cfg
	img, err := mutate.ConfigFile(base, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: s.created}, CreatedBy: "ociimage " + s.path,
	}})
}

// write puts the index into a new OCI image layout at dir, named as containerd and Docker
// (io.containerd.image.name, the full reference) and skopeo (org.opencontainers.image.ref.name,
// the tag) look for it.
func write(dir string, s *spec, idx v1.ImageIndex) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty", dir)
	}
	top := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: idx, Descriptor: v1.Descriptor{
		Annotations: map[string]string{
			"io.containerd.image.name":          s.ref.Name(),
			"org.opencontainers.image.ref.name": s.ref.TagStr(),
		},
	}})
	_, err := layout.Write(dir, top)
	return err
}
