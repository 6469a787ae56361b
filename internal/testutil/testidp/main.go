// Command testidp runs a real OpenID Provider for the browser suite
// (tests/console): Ory Hydra and its login app (internal/testutil/oidcop),
// with the login app's control routes on (/_ctl/person, /_ctl/client). It
// prints "ISSUER=<url>" and "CONTROL=<url>" on stdout, then serves until
// SIGTERM or SIGINT.
//
//	testidp -hydra PATH
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sovereign-ai/sovereign/internal/testutil/oidcop"
)

func main() {
	bin := flag.String("hydra", "", "the hydra binary (scripts/hydra.sh prints its path)")
	flag.Parse()
	if *bin == "" {
		log.Fatal("testidp: -hydra is required")
	}
	op, stop, err := oidcop.Start(*bin, os.Stderr, true)
	if err != nil {
		log.Fatalf("testidp: %v", err)
	}
	fmt.Printf("ISSUER=%s\nCONTROL=%s\n", op.Issuer, op.LoginURL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	// Ends with the suite that started it, even one that died without
	// stopping it (a reparented process has a new parent).
	parent := os.Getppid()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-sig:
			stop()
			return
		case <-tick.C:
			if os.Getppid() != parent {
				stop()
				return
			}
		}
	}
}
