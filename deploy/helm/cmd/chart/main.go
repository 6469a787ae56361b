// Command chart renders and packages Sovereign's Helm chart
// (deploy/helm/sovereign) with Helm's own library:
//
//	go run -C deploy/helm ./cmd/chart render [-f values.yaml]... [-set key=value]... [-notes]
//	go run -C deploy/helm ./cmd/chart render -f values.yaml -podman DIR
//	go run -C deploy/helm ./cmd/chart package -out DIR [-app-version VERSION]
//
// render prints what `helm template` would, with the hooks first in the
// order Helm runs them and every object decoded strictly into its
// Kubernetes type (an error otherwise). -notes prints the release notes
// instead; -podman writes what podman 4.3's `kube play` can run
// (scripts/helm-test.sh plays it; helmchart.WritePodman says what changes
// and why) and prints the files' paths as shell assignments.
//
// package writes sovereign-<chart version>.tgz as `helm package` does, with
// every file dated SOURCE_DATE_EPOCH (default: the last commit's time) so
// that it is reproducible; make release uses it.
//
// go run -C changes the directory: give value files as absolute paths.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	helmchart "github.com/sovereign-ai/sovereign/deploy/helm"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
)

const usage = `usage:
  chart render [-f values.yaml]... [-set key=value]... [-name NAME] [-namespace NS] [-upgrade] [-notes | -podman DIR]
  chart package -out DIR [-app-version VERSION]
`

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "render":
		err = render(os.Args[2:])
	case "package":
		err = pkg(os.Args[2:])
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func render(args []string) error {
	var opts values.Options
	fs := flag.NewFlagSet("chart render", flag.ExitOnError)
	fs.Var((*list)(&opts.ValueFiles), "f", "a values file (repeatable)")
	fs.Var((*list)(&opts.Values), "set", "key=value, as helm --set (repeatable)")
	dir := fs.String("chart", helmchart.ChartDir(), "the chart directory")
	name := fs.String("name", "sovereign", "the release name")
	ns := fs.String("namespace", "default", "the release namespace")
	upgrade := fs.Bool("upgrade", false, "render as helm upgrade would")
	notes := fs.Bool("notes", false, "print the release notes (NOTES.txt) instead of the objects")
	podman := fs.String("podman", "", "write what podman kube play runs into this directory")
	fs.Parse(args)

	vals, err := opts.MergeValues(getter.Providers{})
	if err != nil {
		return err
	}
	r, err := helmchart.Render(*dir, vals, helmchart.Options{ReleaseName: *name, Namespace: *ns, Upgrade: *upgrade})
	if err != nil {
		return err
	}
	for _, d := range r.Docs {
		if _, err := helmchart.Decode(d); err != nil {
			return err
		}
	}
	switch {
	case *notes:
		fmt.Print(r.Notes)
	case *podman != "":
		plan, err := helmchart.WritePodman(r, *podman)
		if err != nil {
			return err
		}
		fmt.Printf("SECRETS=(%s)\n", quoteAll(plan.Secrets))
		fmt.Printf("MIGRATE=%q\n", plan.Migrate)
		fmt.Printf("SERVERS=(%s)\n", quoteAll(plan.Servers))
	default:
		return r.WriteYAML(os.Stdout)
	}
	return nil
}

func pkg(args []string) error {
	fs := flag.NewFlagSet("chart package", flag.ExitOnError)
	dir := fs.String("chart", helmchart.ChartDir(), "the chart directory")
	out := fs.String("out", "", "the directory to write the archive into")
	appVersion := fs.String("app-version", "", "the chart's appVersion (the default image tag); default Chart.yaml's")
	fs.Parse(args)
	if *out == "" {
		return fmt.Errorf("package: -out DIR is required")
	}
	epoch, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	path, err := helmchart.Package(*dir, *out, *appVersion, epoch)
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}

// sourceDateEpoch is SOURCE_DATE_EPOCH, else the last commit's time, else
// the Unix epoch: never the time of packaging.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		if b, err := exec.Command("git", "log", "-1", "--format=%ct").Output(); err == nil {
			s = strings.TrimSpace(string(b))
		}
	}
	if s == "" {
		return time.Unix(0, 0), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(n, 0), nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}
