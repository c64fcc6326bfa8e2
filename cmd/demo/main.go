package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1   // a step failed
	exitUsage       = 2   // bad flags
	exitInterrupted = 130 // Ctrl-C, as a shell reports it
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts Options
	fs.StringVar(&opts.Vrrpd, "vrrpd", "", "vrrpd binary to run (default: build cmd/vrrpd with the go command)")
	fs.DurationVar(&opts.Adverts, "adverts", 100*time.Millisecond, "advertisement interval of the routers (10ms steps)")
	fs.DurationVar(&opts.Pause, "pause", 3*time.Second, "pause after each step, to read it")
	fs.BoolVar(&opts.Keep, "keep", false, "leave the lab up at the end and print how to enter it")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if err := checkAdverts(opts.Adverts); err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return exitUsage
	}

	// The first Ctrl-C (or SIGTERM) ends the current step; the teardown then runs with
	// the signals still caught, so a second Ctrl-C cannot leave namespaces behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := Run(ctx, opts, stdout)
	switch {
	case ctx.Err() != nil:
		return exitInterrupted
	case err != nil:
		return exitFailed
	}
	fmt.Fprintln(stdout, "\nall steps passed")
	return exitOK
}
