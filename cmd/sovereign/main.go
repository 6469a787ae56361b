// Command sovereign is Sovereign's single binary: the API server
// (`sovereign serve`), the model runner it starts per loaded model
// (`sovereign runner`), the sandbox it reads PDFs in (`sovereign
// extract`), and model management (`sovereign models`).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sovereign-ai/sovereign/internal/extract"
	"github.com/sovereign-ai/sovereign/internal/runner"
)

const usage = `usage: sovereign <command> [flags]

commands:
  serve     run the API server
  migrate   bring the database schema up to date (or --check it) and exit
  models    pull, import, list and remove models; manage a server's model catalog
  keys      create, list, revoke and rotate API keys
  users     create, list and deactivate the people who sign in to the console
  audit     verify the request log's hash chain
  bundle    make, verify and install signed offline bundles (keygen, create, verify, install)
  runner    serve one model (started by the server; not for direct use)
  extract   read one uploaded PDF under a budget (started by the server; not for direct use)
  version   print the version
`

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	// The container image points TMPDIR into the data directory, the only
	// writable path (docs/image.md); a fresh volume does not have it yet.
	if d := os.Getenv("TMPDIR"); d != "" {
		if err := os.MkdirAll(d, 0o700); err != nil {
			fmt.Fprintln(os.Stderr, "sovereign: TMPDIR:", err)
			os.Exit(1)
		}
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serveCommand(os.Args[2:])
	case "migrate":
		err = migrateCommand(context.Background(), os.Args[2:], os.Stdout, os.Stderr)
	case "audit":
		err = auditCommand(context.Background(), os.Args[2:], os.Stdout, os.Stderr)
	case "keys":
		err = keysCommand(context.Background(), os.Args[2:], os.Stdout, os.Stderr)
	case "users":
		err = usersCommand(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr)
	case "runner":
		err = runnerCommand(os.Args[2:], os.Stdout)
	case "extract":
		// The server's sandbox for hostile files (internal/extract): the
		// request on stdin, the text as JSON on stdout.
		err = extract.ServeChild(os.Stdin, os.Stdout)
	case "models":
		err = modelsCommand(context.Background(), os.Args[2:], os.Stdout, os.Stderr)
	case "bundle":
		err = bundleCommand(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr)
	case "version":
		fmt.Println("sovereign", version)
		var cpu string
		if cpu, err = runner.CPUKernels(); err == nil {
			fmt.Println("CPU kernels:", cpu)
		}
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "sovereign: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sovereign:", err)
		os.Exit(1)
	}
}
