// Package helmchart renders, checks and packages Sovereign's Helm chart
// (deploy/helm/sovereign) with Helm's own library (v3, as a Go module from
// the proxy) and the Kubernetes API types: the render tests of `make
// test-helm`, the pods scripts/helm-test.sh plays with podman, and the
// chart archive of `make release` (cmd/chart is the command).
//
// This is a module of its own (deploy/helm/go.mod) so that Helm and the
// Kubernetes API types stay out of the server's module.
package helmchart

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// KubeVersion is the Kubernetes version the chart is rendered for when no
// cluster is asked: Helm's library alone says 1.20 (the real helm binary
// gets its own from a build flag), older than the chart's preStop sleep.
var KubeVersion = chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}

// ChartDir is the chart's directory: next to this package's source, else
// ./sovereign (a binary built with -trimpath run from deploy/helm).
func ChartDir() string {
	if _, file, _, ok := runtime.Caller(0); ok {
		d := filepath.Join(filepath.Dir(file), "sovereign")
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return "sovereign"
}

// Options says how to render.
type Options struct {
	ReleaseName string // default "sovereign"
	Namespace   string // default "default"
	// Upgrade renders as `helm upgrade` would (.Release.IsUpgrade).
	Upgrade bool
}

// Doc is one rendered Kubernetes object.
type Doc struct {
	Source     string   // the template, e.g. sovereign/templates/deployment.yaml
	APIVersion string   // e.g. apps/v1
	Kind       string   // e.g. Deployment
	Name       string   // metadata.name
	Hooks      []string // the hook events (pre-install, pre-upgrade); none for the release's objects
	Weight     int      // the hook weight
	YAML       []byte
}

// Rendered is a release as Helm would apply it: Docs holds the
// pre-install hooks in the order Helm runs them (weight, then kind), then
// the release's objects in Helm's install order.
type Rendered struct {
	Docs  []Doc
	Notes string
}

// Render renders the chart in chartDir with vals the way `helm install
// --dry-run` (client only) does, hooks included, and validates vals
// against the chart's values.schema.json on the way.
func Render(chartDir string, vals map[string]any, opt Options) (*Rendered, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	if opt.ReleaseName == "" {
		opt.ReleaseName = "sovereign"
	}
	if opt.Namespace == "" {
		opt.Namespace = "default"
	}
	// ClientOnly fills in a memory release store, a fake cluster and
	// default capabilities; the rest of Configuration stays unused.
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	inst := action.NewInstall(cfg)
	inst.DryRun = true
	inst.DryRunOption = "client"
	inst.ClientOnly = true
	inst.Replace = true
	inst.IsUpgrade = opt.Upgrade
	inst.ReleaseName = opt.ReleaseName
	inst.Namespace = opt.Namespace
	kv := KubeVersion
	inst.KubeVersion = &kv
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	r := &Rendered{Notes: rel.Info.Notes}

	hooks := slices.Clone(rel.Hooks)
	// Helm runs a phase's hooks by weight, and by kind (install order)
	// within a weight.
	order := map[string]int{}
	for i, k := range releaseutil.InstallOrder {
		order[k] = i
	}
	sort.SliceStable(hooks, func(i, j int) bool {
		if hooks[i].Weight != hooks[j].Weight {
			return hooks[i].Weight < hooks[j].Weight
		}
		return order[hooks[i].Kind] < order[hooks[j].Kind]
	})
	for _, h := range hooks {
		d, err := newDoc(h.Path, []byte(h.Manifest))
		if err != nil {
			return nil, err
		}
		for _, e := range h.Events {
			d.Hooks = append(d.Hooks, string(e))
		}
		d.Weight = h.Weight
		r.Docs = append(r.Docs, d)
	}
	for _, part := range splitManifest(rel.Manifest) {
		d, err := newDoc(part.source, part.body)
		if err != nil {
			return nil, err
		}
		r.Docs = append(r.Docs, d)
	}
	return r, nil
}

type manifestPart struct {
	source string
	body   []byte
}

var (
	docSep    = regexp.MustCompile(`(?m)^---[ \t]*$`)
	sourceTag = regexp.MustCompile(`(?m)^# Source: (.*)$`)
)

// splitManifest splits a release's manifest (Helm writes "---\n# Source:
// PATH\n" before each object, in install order) and keeps the order, which
// releaseutil.SplitManifests, returning a map, does not.
func splitManifest(m string) []manifestPart {
	var out []manifestPart
	for _, chunk := range docSep.Split(m, -1) {
		if strings.TrimSpace(chunk) == "" {
			continue
		}
		p := manifestPart{body: []byte(chunk)}
		if s := sourceTag.FindStringSubmatch(chunk); s != nil {
			p.source = s[1]
		}
		out = append(out, p)
	}
	return out
}

func newDoc(source string, body []byte) (Doc, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(body, &head); err != nil {
		return Doc{}, fmt.Errorf("%s: %w", source, err)
	}
	if head.Kind == "" || head.APIVersion == "" || head.Metadata.Name == "" {
		return Doc{}, fmt.Errorf("%s: an object without apiVersion, kind or metadata.name:\n%s", source, body)
	}
	return Doc{Source: source, APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name, YAML: body}, nil
}

// types maps each apiVersion and kind the chart renders to its Go type:
// Kubernetes' own, and the Prometheus Operator's for the ServiceMonitor.
var types = map[string]func() any{
	"v1/ConfigMap":                           func() any { return new(corev1.ConfigMap) },
	"v1/PersistentVolumeClaim":               func() any { return new(corev1.PersistentVolumeClaim) },
	"v1/Pod":                                 func() any { return new(corev1.Pod) },
	"v1/Secret":                              func() any { return new(corev1.Secret) },
	"v1/Service":                             func() any { return new(corev1.Service) },
	"v1/ServiceAccount":                      func() any { return new(corev1.ServiceAccount) },
	"apps/v1/Deployment":                     func() any { return new(appsv1.Deployment) },
	"batch/v1/Job":                           func() any { return new(batchv1.Job) },
	"policy/v1/PodDisruptionBudget":          func() any { return new(policyv1.PodDisruptionBudget) },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"networking.k8s.io/v1/Ingress":           func() any { return new(networkingv1.Ingress) },
	"networking.k8s.io/v1/NetworkPolicy":     func() any { return new(networkingv1.NetworkPolicy) },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any {
		return new(monitoringv1.ServiceMonitor)
	},
}

// Decode decodes d strictly into its typed object, as an API server with
// strict field validation would: a field the type does not have (a
// misspelling, a wrong level of indentation), a key given twice or a
// field in the wrong case is an error, as is a kind the chart should not
// render.
func Decode(d Doc) (any, error) {
	mk, ok := types[d.APIVersion+"/"+d.Kind]
	if !ok {
		return nil, fmt.Errorf("%s: unexpected %s %s", d.Source, d.APIVersion, d.Kind)
	}
	js, err := yaml.YAMLToJSONStrict(d.YAML)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Source, err)
	}
	obj := mk()
	strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", d.Source, d.Kind, d.Name, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: %s %s: %w", d.Source, d.Kind, d.Name, errors.Join(strict...))
	}
	return obj, nil
}

// WriteYAML writes the documents as one YAML stream.
func (r *Rendered) WriteYAML(w io.Writer) error {
	for _, d := range r.Docs {
		hook := ""
		if len(d.Hooks) > 0 {
			hook = fmt.Sprintf(" (hook %s, weight %d)", strings.Join(d.Hooks, ","), d.Weight)
		}
		body := strings.TrimSpace(sourceTag.ReplaceAllString(string(d.YAML), ""))
		if _, err := fmt.Fprintf(w, "---\n# Source: %s%s\n%s\n", d.Source, hook, body); err != nil {
			return err
		}
	}
	return nil
}

// Find returns the documents of a kind.
func (r *Rendered) Find(kind string) []Doc {
	var out []Doc
	for _, d := range r.Docs {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// isHook reports whether d runs as a hook of event.
func (d Doc) isHook(event release.HookEvent) bool {
	return slices.Contains(d.Hooks, string(event))
}
