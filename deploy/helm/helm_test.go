package helmchart

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

const chart = "sovereign"

// vals parses values written as YAML, which reads better than nested maps.
func vals(t *testing.T, y string) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &v); err != nil {
		t.Fatalf("values: %v\n%s", err, y)
	}
	return v
}

// A testCase is one set of values of the matrix, with what it must give.
type testCase struct {
	name     string
	values   string
	postgres bool // PostgreSQL mode: the hook Job, no PVC
	replicas int  // the Deployment's replicas; 0: left to the HPA
	image    string
	kinds    []string // every kind rendered, hooks included, sorted
}

var matrix = []testCase{
	{
		name:     "defaults",
		values:   ``,
		replicas: 1,
		image:    "sovereign:0.1.0-models",
		kinds:    []string{"Deployment", "NetworkPolicy", "PersistentVolumeClaim", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount"},
	},
	{
		name: "sqlite, models from a volume",
		values: `
models: {source: volume, existingClaim: sovereign-models}
persistence: {storageClass: "-", size: 50Gi}
`,
		replicas: 1,
		image:    "sovereign:0.1.0",
		kinds:    []string{"Deployment", "NetworkPolicy", "PersistentVolumeClaim", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount"},
	},
	{
		name: "postgres, redis, 3 replicas, ingress, servicemonitor, upstreams, config",
		values: `
image: {repository: registry.example/ai/sovereign, tag: v1.2.0}
replicaCount: 3
database: {url: "postgres://sovereign:secret@db.example:6432/sovereign?sslmode=verify-full"}
redis: {url: "rediss://:pw@redis.example:6380/0"}
models: {source: none}
config:
  log_level: info
  upstream_allow: [vllm.inference.svc]
  models:
    - {id: llama-70b, upstream: {url: "http://vllm.inference.svc:8000/v1"}}
ingress:
  enabled: true
  className: nginx
  annotations: {nginx.ingress.kubernetes.io/proxy-read-timeout: "3600"}
  hosts: [{host: ai.example.internal, paths: [{path: /, pathType: Prefix}]}]
  tls: [{secretName: ai-tls, hosts: [ai.example.internal]}]
serviceMonitor: {enabled: true, labels: {release: prometheus}}
networkPolicy:
  ingressFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}}]
  egress:
    database: {to: [{ipBlock: {cidr: 10.10.0.5/32}}]}
    redis: {to: [{podSelector: {matchLabels: {app: redis}}}]}
    upstreams:
      - to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: inference}}}]
        ports: [{port: 8000, protocol: TCP}]
`,
		postgres: true,
		replicas: 3,
		image:    "registry.example/ai/sovereign:v1.2.0",
		kinds: []string{"ConfigMap", "Deployment", "Ingress", "Job", "NetworkPolicy", "PodDisruptionBudget",
			"Secret", "Secret", "Service", "ServiceAccount", "ServiceAccount", "ServiceMonitor"},
	},
	{
		name: "postgres with an HPA",
		values: `
database: {url: "postgresql://sovereign@db:5432/sovereign"}
redis: {url: "redis://redis:6379/0"}
autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 8, targetMemoryUtilizationPercentage: 80}
podDisruptionBudget: {minAvailable: 1, maxUnavailable: null}
`,
		postgres: true,
		image:    "sovereign:0.1.0-models",
		kinds: []string{"Deployment", "HorizontalPodAutoscaler", "Job", "NetworkPolicy", "PodDisruptionBudget",
			"Secret", "Secret", "Service", "ServiceAccount", "ServiceAccount"},
	},
	{
		name: "existing secrets",
		values: `
auth: {existingSecret: sovereign-admin, existingSecretKey: key}
database: {existingSecret: pg-app, existingSecretKey: uri}
redis: {existingSecret: redis-auth}
serviceAccount: {create: false, name: sovereign-sa}
`,
		postgres: true,
		replicas: 2,
		image:    "sovereign:0.1.0-models",
		kinds:    []string{"Deployment", "Job", "NetworkPolicy", "PodDisruptionBudget", "Service"},
	},
	{
		name: "models image pinned by digest, HTTPS in the pod",
		values: `
image: {repository: registry.example/sovereign, tag: v1.2.0, digest: "sha256:1507d0d8e2a4be1ab1ea11295bbb4c5454fb4967af6ae51e794a2a0063aee784"}
database: {url: "postgres://db/sovereign"}
tls: {existingSecret: sovereign-tls}
serviceMonitor: {enabled: true, tlsConfig: {insecureSkipVerify: true}}
networkPolicy: {enabled: false}
podDisruptionBudget: {enabled: false}
`,
		postgres: true,
		replicas: 2,
		image:    "registry.example/sovereign:v1.2.0-models@sha256:1507d0d8e2a4be1ab1ea11295bbb4c5454fb4967af6ae51e794a2a0063aee784",
		kinds:    []string{"Deployment", "Job", "Secret", "Secret", "Service", "ServiceAccount", "ServiceAccount", "ServiceMonitor"},
	},
}

// objects decodes every rendered document strictly.
func objects(t *testing.T, r *Rendered) []any {
	t.Helper()
	var out []any
	for _, d := range r.Docs {
		o, err := Decode(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func only[T any](t *testing.T, objs []any) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want one %T, rendered %d", zero, len(found))
	}
	return found[0]
}

func all[T any](objs []any) []T {
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = append(found, v)
		}
	}
	return found
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// Lint as `helm lint --strict` does, for every set of values: the schema,
// the templates, Chart.yaml.
func TestLint(t *testing.T) {
	for _, tc := range matrix {
		t.Run(tc.name, func(t *testing.T) {
			l := action.NewLint()
			l.Strict = true
			l.Namespace = "ai"
			kv := KubeVersion
			l.KubeVersion = &kv
			res := l.Run([]string{chart}, vals(t, tc.values))
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				}
			}
			for _, err := range res.Errors {
				t.Errorf("lint: %v", err)
			}
			if res.TotalChartsLinted != 1 {
				t.Errorf("linted %d charts", res.TotalChartsLinted)
			}
		})
	}
}

// Render every set of values, decode every object strictly into its type,
// and check what the chart promises.
func TestRenderMatrix(t *testing.T) {
	for _, tc := range matrix {
		t.Run(tc.name, func(t *testing.T) {
			v := vals(t, tc.values)
			r, err := Render(chart, v, Options{ReleaseName: "sov", Namespace: "ai"})
			if err != nil {
				t.Fatal(err)
			}
			objs := objects(t, r)
			var kinds []string
			for _, d := range r.Docs {
				kinds = append(kinds, d.Kind)
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, tc.kinds) {
				t.Errorf("rendered kinds %v, want %v", kinds, tc.kinds)
			}
			checkNames(t, r)
			dep := only[*appsv1.Deployment](t, objs)
			checkDeployment(t, tc, dep)
			checkService(t, objs, dep)
			checkSecretRefs(t, r, objs, v)
			checkJob(t, tc, r, objs, dep)
			checkNetworkPolicy(t, tc, objs, dep)
			checkModes(t, tc, objs, dep)
		})
	}
}

// Names and labels the API server would refuse.
func checkNames(t *testing.T, r *Rendered) {
	for _, d := range r.Docs {
		for _, msg := range validation.IsDNS1123Subdomain(d.Name) {
			t.Errorf("%s %s: name: %s", d.Kind, d.Name, msg)
		}
		if d.Kind == "Service" {
			for _, msg := range validation.IsDNS1035Label(d.Name) {
				t.Errorf("Service %s: name: %s", d.Name, msg)
			}
		}
		js, _ := yaml.YAMLToJSON(d.YAML)
		var meta struct {
			Metadata struct {
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		json.Unmarshal(js, &meta)
		if meta.Metadata.Namespace != "ai" {
			t.Errorf("%s %s: namespace %q, want the release's", d.Kind, d.Name, meta.Metadata.Namespace)
		}
		for k, v := range meta.Metadata.Labels {
			for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
				t.Errorf("%s %s: label %s=%s: %s", d.Kind, d.Name, k, v, msg)
			}
		}
	}
}

func checkDeployment(t *testing.T, tc testCase, dep *appsv1.Deployment) {
	spec := dep.Spec.Template.Spec
	sel, err := metav1LabelSelector(dep.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", dep.Spec.Selector, dep.Spec.Template.Labels)
	}
	switch {
	case tc.replicas == 0 && dep.Spec.Replicas != nil:
		t.Errorf("replicas %d set while an HPA scales the Deployment", *dep.Spec.Replicas)
	case tc.replicas > 0 && (dep.Spec.Replicas == nil || int(*dep.Spec.Replicas) != tc.replicas):
		t.Errorf("replicas %v, want %d", dep.Spec.Replicas, tc.replicas)
	}

	// Non-root, read-only, no privileges: what docs/image.md and the
	// restricted Pod Security Standard ask.
	psc := spec.SecurityContext
	if psc == nil || !isTrue(psc.RunAsNonRoot) || !is(psc.RunAsUser, 65532) || !is(psc.RunAsGroup, 65532) || !is(psc.FSGroup, 65532) ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", psc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	checkContainerSecurity(t, "server", c)
	if c.Image != tc.image {
		t.Errorf("image %q, want %q", c.Image, tc.image)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the service account token is mounted; the server needs none")
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Error("enableServiceLinks: a Service named sovereign would inject SOVEREIGN_PORT… variables")
	}

	// Probes: /livez for liveness and startup, /readyz for readiness.
	for name, want := range map[string]struct {
		p    *corev1.Probe
		path string
	}{"liveness": {c.LivenessProbe, "/livez"}, "readiness": {c.ReadinessProbe, "/readyz"}, "startup": {c.StartupProbe, "/livez"}} {
		if want.p == nil || want.p.HTTPGet == nil || want.p.HTTPGet.Path != want.path || want.p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v, want GET %s on port http", name, want.p, want.path)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports %+v", c.Ports)
	}
	if e, _ := env(c, "SOVEREIGN_ADDR"); e.Value != "0.0.0.0:8080" {
		t.Errorf("SOVEREIGN_ADDR %q", e.Value)
	}

	// The grace period covers the preStop sleep and the server's drain.
	shut, _ := env(c, "SOVEREIGN_SHUTDOWN_TIMEOUT")
	d, err := time.ParseDuration(shut.Value)
	if err != nil {
		t.Fatalf("SOVEREIGN_SHUTDOWN_TIMEOUT %q: %v", shut.Value, err)
	}
	sleep := int64(0)
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		sleep = c.Lifecycle.PreStop.Sleep.Seconds
	}
	if sleep == 0 {
		t.Error("no preStop sleep: new connections reach a pod that has closed its listener")
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g <= int64(d.Seconds())+sleep {
		t.Errorf("terminationGracePeriodSeconds %v, want more than %ds", g, int64(d.Seconds())+sleep)
	}

	// /data is mounted (the only writable path), TMPDIR under it.
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/data" && !m.ReadOnly }) {
		t.Error("/data is not mounted writable")
	}
	if e, _ := env(c, "TMPDIR"); e.Value != "/data/tmp" {
		t.Errorf("TMPDIR %q", e.Value)
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want memory requests and limits", c.Resources)
	}

	// Spread over zones and nodes, each constraint selecting these pods.
	if len(spec.TopologySpreadConstraints) < 2 {
		t.Errorf("topologySpreadConstraints %+v", spec.TopologySpreadConstraints)
	}
	for _, tsc := range spec.TopologySpreadConstraints {
		s, err := metav1LabelSelector(tsc.LabelSelector)
		if err != nil || !s.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("topology spread on %s does not select the pods", tsc.TopologyKey)
		}
		if !slices.Contains(tsc.MatchLabelKeys, "pod-template-hash") {
			t.Errorf("topology spread on %s: no matchLabelKeys pod-template-hash", tsc.TopologyKey)
		}
	}
}

func checkContainerSecurity(t *testing.T, what string, c corev1.Container) {
	sc := c.SecurityContext
	if sc == nil || !isTrue(sc.ReadOnlyRootFilesystem) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 ||
		!isTrue(sc.RunAsNonRoot) || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: container securityContext %+v", what, sc)
	}
}

func checkService(t *testing.T, objs []any, dep *appsv1.Deployment) {
	svc := only[*corev1.Service](t, objs)
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the Service selects %v, not the pods %v", svc.Spec.Selector, dep.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports %+v", svc.Spec.Ports)
	}
	for _, pdb := range all[*policyv1.PodDisruptionBudget](objs) {
		s, err := metav1LabelSelector(pdb.Spec.Selector)
		if err != nil || !s.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("the PodDisruptionBudget does not select the pods")
		}
		if (pdb.Spec.MinAvailable == nil) == (pdb.Spec.MaxUnavailable == nil) {
			t.Errorf("PodDisruptionBudget %+v: want one of minAvailable and maxUnavailable", pdb.Spec)
		}
	}
	for _, sm := range all[*monitoringv1.ServiceMonitor](objs) {
		s, err := metav1LabelSelector(&sm.Spec.Selector)
		if err != nil || !s.Matches(labels.Set(svc.Labels)) {
			t.Errorf("the ServiceMonitor selects %v, not the Service %v", sm.Spec.Selector, svc.Labels)
		}
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "http" || sm.Spec.Endpoints[0].Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
		}
	}
	for _, ing := range all[*networkingv1.Ingress](objs) {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				if p.Backend.Service == nil || p.Backend.Service.Name != svc.Name || p.Backend.Service.Port.Name != "http" {
					t.Errorf("Ingress path %s goes to %+v, not the Service", p.Path, p.Backend)
				}
			}
		}
	}
	for _, hpa := range all[*autoscalingv2.HorizontalPodAutoscaler](objs) {
		if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != dep.Name {
			t.Errorf("HPA scales %+v", hpa.Spec.ScaleTargetRef)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || len(hpa.Spec.Metrics) == 0 {
			t.Errorf("HPA %+v", hpa.Spec)
		}
	}
}

// Every secretKeyRef names a Secret the chart renders with that key or one
// the values say exists; the hook Job's refer only to objects that exist
// before it runs: hooks of a lower weight, or the operator's.
func checkSecretRefs(t *testing.T, r *Rendered, objs []any, v map[string]any) {
	type secret struct {
		keys   []string
		hook   bool
		weight int
	}
	secrets := map[string]secret{}
	for i, d := range r.Docs {
		if s, ok := objs[i].(*corev1.Secret); ok {
			secrets[s.Name] = secret{slices.Collect(maps.Keys(s.Data)), len(d.Hooks) > 0, d.Weight}
		}
	}
	external := map[string]bool{}
	for _, k := range []string{"auth", "database", "redis"} {
		if m, ok := v[k].(map[string]any); ok {
			if s, _ := m["existingSecret"].(string); s != "" {
				external[s] = true
			}
		}
	}
	for i, d := range r.Docs {
		var spec corev1.PodSpec
		switch o := objs[i].(type) {
		case *appsv1.Deployment:
			spec = o.Spec.Template.Spec
		case *batchv1.Job:
			spec = o.Spec.Template.Spec
		default:
			continue
		}
		for _, c := range spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				if external[ref.Name] {
					continue
				}
				s, ok := secrets[ref.Name]
				switch {
				case !ok:
					t.Errorf("%s %s: %s refers to Secret %s, which is neither rendered nor given", d.Kind, d.Name, e.Name, ref.Name)
				case !slices.Contains(s.keys, ref.Key):
					t.Errorf("%s %s: %s refers to key %s of Secret %s, which holds %v", d.Kind, d.Name, e.Name, ref.Key, ref.Name, s.keys)
				case len(d.Hooks) > 0 && (!s.hook || s.weight >= d.Weight):
					t.Errorf("hook %s %s: %s refers to Secret %s, which does not exist yet when the hook runs", d.Kind, d.Name, e.Name, ref.Name)
				}
			}
		}
	}
}

func checkJob(t *testing.T, tc testCase, r *Rendered, objs []any, dep *appsv1.Deployment) {
	jobs := all[*batchv1.Job](objs)
	c := dep.Spec.Template.Spec.Containers[0]
	migrateOnStart, _ := env(c, "SOVEREIGN_MIGRATE_ON_START")
	if !tc.postgres {
		if len(jobs) > 0 {
			t.Error("a migration Job with SQLite: the pod migrates its own database")
		}
		if migrateOnStart.Value != "true" {
			t.Errorf("SQLite: SOVEREIGN_MIGRATE_ON_START %q, want true", migrateOnStart.Value)
		}
		return
	}
	if migrateOnStart.Value != "false" {
		t.Errorf("PostgreSQL: SOVEREIGN_MIGRATE_ON_START %q, want false (the hook Job migrates)", migrateOnStart.Value)
	}
	if _, ok := env(c, "SOVEREIGN_DATABASE_URL"); !ok {
		t.Error("PostgreSQL: no SOVEREIGN_DATABASE_URL")
	}
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs", len(jobs))
	}
	job := jobs[0]
	a := job.Annotations
	if a["helm.sh/hook"] != "pre-install,pre-upgrade" || a["helm.sh/hook-delete-policy"] != "before-hook-creation" {
		t.Errorf("Job annotations %v", a)
	}
	// The hooks run before every object of the release, the Job last.
	var jobAt, firstObject = -1, -1
	for i, d := range r.Docs {
		switch {
		case d.Kind == "Job":
			jobAt = i
			if !d.isHook("pre-install") || !d.isHook("pre-upgrade") {
				t.Errorf("Job hooks %v", d.Hooks)
			}
		case len(d.Hooks) == 0 && firstObject < 0:
			firstObject = i
		case len(d.Hooks) > 0 && jobAt >= 0:
			t.Errorf("hook %s %s runs after the Job", d.Kind, d.Name)
		}
	}
	if jobAt < 0 || firstObject < jobAt {
		t.Errorf("the Job (document %d) does not come before the release's objects (from %d)", jobAt, firstObject)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit > 2 {
		t.Errorf("backoffLimit %v: a failing migration should fail the upgrade, not retry for long", job.Spec.BackoffLimit)
	}
	if job.Spec.ActiveDeadlineSeconds == nil {
		t.Error("no activeDeadlineSeconds: a stuck migration would hang the upgrade")
	}
	spec := job.Spec.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s", spec.RestartPolicy)
	}
	jc := spec.Containers[0]
	if !slices.Equal(jc.Command[:2], []string{"/usr/bin/sovereign", "migrate"}) || !slices.Contains(jc.Command, "--wait") {
		t.Errorf("Job command %v, want sovereign migrate --wait", jc.Command)
	}
	if jc.Image != c.Image {
		t.Errorf("Job image %s, server %s: the new release's image must migrate", jc.Image, c.Image)
	}
	checkContainerSecurity(t, "migrate", jc)
	if !reflect.DeepEqual(spec.SecurityContext, dep.Spec.Template.Spec.SecurityContext) {
		t.Errorf("Job pod securityContext %+v differs from the server's", spec.SecurityContext)
	}
	// The Job's pod must not join the Service (it would get traffic) or
	// count for the PodDisruptionBudget.
	sel, _ := metav1LabelSelector(dep.Spec.Selector)
	if sel.Matches(labels.Set(job.Spec.Template.Labels)) {
		t.Errorf("the Deployment's selector matches the Job's pod %v", job.Spec.Template.Labels)
	}
	// Its service account exists before it runs.
	if sa := spec.ServiceAccountName; sa != "" && sa != "default" {
		found := false
		for _, d := range r.Docs {
			if d.Kind == "ServiceAccount" && d.Name == sa && len(d.Hooks) > 0 && d.Weight < 0 {
				found = true
			}
		}
		if v := dep.Spec.Template.Spec.ServiceAccountName; !found && !(sa == v && len(r.Find("ServiceAccount")) == 0) {
			t.Errorf("the Job runs as %s, which is created after it", sa)
		}
	}
}

func checkNetworkPolicy(t *testing.T, tc testCase, objs []any, dep *appsv1.Deployment) {
	nps := all[*networkingv1.NetworkPolicy](objs)
	if len(nps) == 0 {
		return
	}
	np := nps[0]
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("policyTypes %v", np.Spec.PolicyTypes)
	}
	sel, err := metav1LabelSelector(&np.Spec.PodSelector)
	if err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Error("the NetworkPolicy does not select the server's pods")
	}
	for _, job := range all[*batchv1.Job](objs) {
		if !sel.Matches(labels.Set(job.Spec.Template.Labels)) {
			t.Error("the NetworkPolicy does not select the migration Job's pod")
		}
	}
	// No rule may open every port: each names the ports it allows.
	var ports []string
	for _, rule := range np.Spec.Egress {
		if len(rule.Ports) == 0 {
			t.Errorf("egress rule %+v allows every port", rule)
		}
		for _, p := range rule.Ports {
			ports = append(ports, fmt.Sprintf("%s/%s", p.Port, *p.Protocol))
		}
	}
	want := []string{"53/UDP", "53/TCP"}
	if tc.postgres {
		c := dep.Spec.Template.Spec.Containers[0]
		if _, ok := env(c, "SOVEREIGN_DATABASE_URL"); ok {
			port := "5432"
			if m := regexp.MustCompile(`@[^/:]+:(\d+)/`).FindStringSubmatch(tc.values); m != nil {
				port = m[1]
			}
			want = append(want, port+"/TCP")
		}
	}
	for _, w := range want {
		if !slices.Contains(ports, w) {
			t.Errorf("egress ports %v lack %s", ports, w)
		}
	}
	if !tc.postgres && len(np.Spec.Egress) != 1 {
		t.Errorf("SQLite: egress rules %+v, want DNS only", np.Spec.Egress)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 8080 {
		t.Errorf("ingress %+v, want the server's port only", np.Spec.Ingress)
	}
}

func checkModes(t *testing.T, tc testCase, objs []any, dep *appsv1.Deployment) {
	spec := dep.Spec.Template.Spec
	var data *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == "data" {
			data = &spec.Volumes[i]
		}
	}
	if data == nil {
		t.Fatal("no data volume")
	}
	pvcs := all[*corev1.PersistentVolumeClaim](objs)
	if tc.postgres {
		if data.EmptyDir == nil || len(pvcs) > 0 {
			t.Errorf("PostgreSQL: /data %+v, %d PVCs; want an emptyDir and none", data.VolumeSource, len(pvcs))
		}
		if dep.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || dep.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
			t.Errorf("PostgreSQL: strategy %+v, want a rolling update that keeps every replica", dep.Spec.Strategy)
		}
	} else {
		if data.PersistentVolumeClaim == nil || len(pvcs) != 1 || pvcs[0].Name != data.PersistentVolumeClaim.ClaimName {
			t.Errorf("SQLite: /data %+v, want the chart's PVC", data.VolumeSource)
		}
		if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("SQLite: strategy %s, want Recreate (one pod owns the database)", dep.Spec.Strategy.Type)
		}
	}
	c := spec.Containers[0]
	models, _ := env(c, "SOVEREIGN_MODELS_DIR")
	mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/models" && m.ReadOnly })
	switch {
	case strings.HasSuffix(strings.Split(tc.image, "@")[0], "-models"):
		if models.Value != "/models" || mounted {
			t.Errorf("models image: SOVEREIGN_MODELS_DIR %q, /models mounted %v", models.Value, mounted)
		}
	case strings.Contains(tc.values, "source: volume"):
		if models.Value != "/models" || !mounted {
			t.Errorf("models volume: SOVEREIGN_MODELS_DIR %q, /models mounted read-only %v", models.Value, mounted)
		}
	default:
		if models.Value != "" || mounted {
			t.Errorf("no models: SOVEREIGN_MODELS_DIR %q, /models mounted %v", models.Value, mounted)
		}
	}
	tls := strings.Contains(tc.values, "tls: {existingSecret")
	if _, insecure := env(c, "SOVEREIGN_ALLOW_INSECURE_HTTP"); insecure == tls {
		t.Errorf("TLS in the pod %v, SOVEREIGN_ALLOW_INSECURE_HTTP set %v", tls, insecure)
	}
	if tls {
		cert, _ := env(c, "SOVEREIGN_TLS_CERT")
		if cert.Value == "" || c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("TLS: cert %q, probe scheme %s", cert.Value, c.ReadinessProbe.HTTPGet.Scheme)
		}
		for _, sm := range all[*monitoringv1.ServiceMonitor](objs) {
			if sm.Spec.Endpoints[0].Scheme == nil || *sm.Spec.Endpoints[0].Scheme != "https" {
				t.Errorf("TLS: the ServiceMonitor scrapes %v", sm.Spec.Endpoints[0].Scheme)
			}
		}
	}
	if cfg, ok := env(c, "SOVEREIGN_CONFIG"); ok {
		cm := only[*corev1.ConfigMap](t, objs)
		var settings map[string]any
		if err := yaml.UnmarshalStrict([]byte(cm.Data["sovereign.yaml"]), &settings); err != nil || len(settings) == 0 {
			t.Errorf("sovereign.yaml %q: %v", cm.Data["sovereign.yaml"], err)
		}
		if filepath.Base(cfg.Value) != "sovereign.yaml" {
			t.Errorf("SOVEREIGN_CONFIG %s", cfg.Value)
		}
	}
}

// The refusals: each of these values must fail the render with a message
// that says what to change.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"replicas with SQLite", `replicaCount: 2`, "replicaCount is 2 but no database is set"},
		{"HPA with SQLite", `autoscaling: {enabled: true}`, "autoscaling.enabled needs PostgreSQL"},
		{"grace period within the drain", `terminationGracePeriodSeconds: 60`, "terminationGracePeriodSeconds (60) must exceed"},
		{"a models volume without a volume", `models: {source: volume}`, "set models.existingClaim"},
		{"the database URL in config", `config: {database_url: "postgres://x/y"}`, "config.database_url is set by the chart"},
		{"both PDB bounds", `podDisruptionBudget: {minAvailable: 1, maxUnavailable: 1}`, "not both"},
		// The schema: an unknown key, wrong types, bad formats.
		{"an unknown key", `replicas: 2`, "additional properties 'replicas' not allowed"},
		{"an unknown nested key", `database: {uri: "postgres://db/x"}`, "additional properties 'uri' not allowed"},
		{"a string for a number", `replicaCount: two`, "at '/replicaCount': got string, want null or integer"},
		{"a number for a boolean", `ingress: {enabled: 1}`, "at '/ingress/enabled': got number, want boolean"},
		{"a MySQL URL", `database: {url: "mysql://db/x"}`, "at '/database/url': 'mysql://db/x' does not match pattern"},
		{"a short bootstrap key", `auth: {bootstrapKey: sk-sov-short}`, "at '/auth/bootstrapKey': 'sk-sov-short' does not match pattern"},
		{"an unknown models source", `models: {source: s3}`, "at '/models/source': value must be one of"},
		{"a bad migration wait", `migrations: {wait: soon}`, "at '/migrations/wait': 'soon' does not match pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(chart, vals(t, tc.values), Options{})
			if err == nil {
				t.Fatalf("rendered with %s", tc.values)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// Decode is strict: what an API server with strict field validation
// refuses, it refuses.
func TestDecodeIsStrict(t *testing.T) {
	ok := "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: 80}]\n"
	if _, err := Decode(Doc{APIVersion: "v1", Kind: "Service", Name: "s", YAML: []byte(ok)}); err != nil {
		t.Fatal(err)
	}
	for name, y := range map[string]string{
		"an unknown field":   strings.Replace(ok, "port: 80", "port: 80, targetPrt: 8080", 1),
		"a field misplaced":  strings.Replace(ok, "spec:", "spec:\n  name: x", 1),
		"a key given twice":  strings.Replace(ok, "{port: 80}", "{port: 80, port: 81}", 1),
		"a field's case":     strings.Replace(ok, "port: 80", "Port: 80", 1),
		"a wrong type":       strings.Replace(ok, "port: 80", "port: [80]", 1),
		"an unexpected kind": strings.Replace(ok, "kind: Service", "kind: Endpoints", 1),
	} {
		kind := "Service"
		if strings.Contains(y, "Endpoints") {
			kind = "Endpoints"
		}
		if _, err := Decode(Doc{APIVersion: "v1", Kind: kind, Name: "s", YAML: []byte(y)}); err == nil {
			t.Errorf("%s: decoded\n%s", name, y)
		}
	}
}

// The replica count defaults to what the mode can run.
func TestDefaultReplicas(t *testing.T) {
	for values, want := range map[string]int32{
		``:                                   1,
		`database: {url: "postgres://db/x"}`: 2,
		`database: {url: "postgres://db/x"}
replicaCount: 5`: 5,
		`replicaCount: 1`: 1,
	} {
		r, err := Render(chart, vals(t, values), Options{})
		if err != nil {
			t.Fatal(err)
		}
		dep := only[*appsv1.Deployment](t, objects(t, r))
		if *dep.Spec.Replicas != want {
			t.Errorf("%q: replicas %d, want %d", values, *dep.Spec.Replicas, want)
		}
	}
}

// NOTES tell the operator the URL and how to read the admin key.
func TestNotes(t *testing.T) {
	r, err := Render(chart, vals(t, matrix[2].values), Options{ReleaseName: "sov", Namespace: "ai"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"https://ai.example.internal/v1",
		"http://sov-sovereign.ai.svc:8080/v1",
		"kubectl -n ai port-forward svc/sov-sovereign 8080:8080",
		"kubectl -n ai get secret sov-sovereign -o jsonpath='{.data.bootstrap-key}' | base64 -d",
		"kubectl -n ai logs job/sov-sovereign-migrate",
	} {
		if !strings.Contains(r.Notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, r.Notes)
		}
	}
	r, err = Render(chart, vals(t, `database: {url: "postgres://db/x"}
auth: {existingSecret: admin, existingSecretKey: admin.key}`), Options{Namespace: "ai"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`get secret admin -o jsonpath='{.data.admin\.key}'`, "WARNING: no redis.url"} {
		if !strings.Contains(r.Notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, r.Notes)
		}
	}
}

// A generated bootstrap key is a valid Sovereign key (what the server's
// SOVEREIGN_BOOTSTRAP_KEY check accepts), and a given one is kept.
func TestBootstrapKey(t *testing.T) {
	valid := regexp.MustCompile(`^sk-sov-[A-Za-z0-9_-]{32,249}$`)
	for values, want := range map[string]string{
		``: "",
		`auth: {bootstrapKey: sk-sov-0123456789abcdefghijklmnopqrstuvwxyz}`: "sk-sov-0123456789abcdefghijklmnopqrstuvwxyz",
	} {
		r, err := Render(chart, vals(t, values), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var key string
		for _, s := range all[*corev1.Secret](objects(t, r)) {
			key = string(s.Data["bootstrap-key"])
		}
		if !valid.MatchString(key) || (want != "" && key != want) {
			t.Errorf("%q: bootstrap key %q", values, key)
		}
	}
}

// What scripts/helm-test.sh plays: the Job's pod and one pod per replica,
// the same as the rendered templates but for what podman 4.3 cannot take.
func TestPodman(t *testing.T) {
	v := vals(t, matrix[2].values)
	r, err := Render(chart, v, Options{ReleaseName: "sov"})
	if err != nil {
		t.Fatal(err)
	}
	objs := objects(t, r)
	dir := t.TempDir()
	plan, err := WritePodman(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Secrets) != 2 || plan.Migrate == "" || len(plan.Servers) != 3 {
		t.Fatalf("plan %+v", plan)
	}
	for _, f := range plan.Secrets {
		b, _ := os.ReadFile(f)
		var data map[string][]byte // podman reads base64 values
		if err := json.Unmarshal(b, &data); err != nil || len(data) == 0 {
			t.Errorf("%s: %v: %s", f, err, b)
		}
		if strings.HasSuffix(f, "/sov-sovereign.json") && string(data["database-url"]) != "postgres://sovereign:secret@db.example:6432/sovereign?sslmode=verify-full" {
			t.Errorf("%s: database-url %q", f, data["database-url"])
		}
	}
	pod := func(path string) (*corev1.Pod, int) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var p *corev1.Pod
		configMaps := 0
		for _, part := range splitManifest(string(b)) {
			d, err := newDoc(path, part.body)
			if err != nil {
				t.Fatal(err)
			}
			o, err := Decode(d)
			if err != nil {
				t.Fatal(err)
			}
			switch o := o.(type) {
			case *corev1.Pod:
				p = o
			case *corev1.ConfigMap:
				configMaps++
			}
		}
		if p == nil {
			t.Fatalf("%s: no Pod", path)
		}
		return p, configMaps
	}
	same := func(what string, got corev1.PodSpec, tmpl corev1.PodSpec, name string) {
		if got.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: restartPolicy %s", what, got.RestartPolicy)
		}
		g, w := got.Containers[0], tmpl.Containers[0]
		if len(g.Ports) > 0 || g.LivenessProbe != nil || g.ReadinessProbe != nil || g.StartupProbe != nil {
			t.Errorf("%s: ports or probes left in", what)
		}
		if g.Image != w.Image || !reflect.DeepEqual(g.Command, w.Command) || !reflect.DeepEqual(g.Env, w.Env) ||
			!reflect.DeepEqual(g.SecurityContext, w.SecurityContext) || !reflect.DeepEqual(g.VolumeMounts, w.VolumeMounts) ||
			!reflect.DeepEqual(g.Resources, w.Resources) || !reflect.DeepEqual(got.SecurityContext, tmpl.SecurityContext) {
			t.Errorf("%s: the container differs from the rendered one", what)
		}
		for i, vol := range got.Volumes {
			switch {
			case tmpl.Volumes[i].EmptyDir != nil:
				if vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != name+"-"+vol.Name {
					t.Errorf("%s: emptyDir %s became %+v, want the pod's own volume", what, vol.Name, vol.VolumeSource)
				}
			case !reflect.DeepEqual(vol, tmpl.Volumes[i]):
				t.Errorf("%s: volume %s changed", what, vol.Name)
			}
		}
	}
	job := only[*batchv1.Job](t, objs)
	mp, _ := pod(plan.Migrate)
	same("migrate", mp.Spec, job.Spec.Template.Spec, job.Name)
	dep := only[*appsv1.Deployment](t, objs)
	for i, f := range plan.Servers {
		sp, cms := pod(f)
		name := fmt.Sprintf("%s-%d", dep.Name, i)
		if sp.Name != name || cms != 1 {
			t.Errorf("%s: pod %s with %d ConfigMaps", f, sp.Name, cms)
		}
		same(name, sp.Spec, dep.Spec.Template.Spec, name)
	}
}

// Every value is documented: each top-level key of values.yaml appears in
// docs/helm.md, and in the schema (which refuses what it does not list).
func TestValuesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	v := vals(t, string(b))
	doc, err := os.ReadFile("../../docs/helm.md")
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(sb, &schema); err != nil {
		t.Fatal(err)
	}
	for k := range v {
		if !strings.Contains(string(doc), "`"+k) {
			t.Errorf("docs/helm.md does not mention `%s`", k)
		}
		if _, ok := schema.Properties[k]; !ok {
			t.Errorf("values.schema.json lacks %s", k)
		}
	}
}

func metav1LabelSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}

func isTrue(b *bool) bool          { return b != nil && *b }
func is(n *int64, want int64) bool { return n != nil && *n == want }

// The packaged chart is what helm package writes, reproducibly: the same
// sources and epoch give the same bytes, and the archive installs with the
// release's image tag.
func TestPackage(t *testing.T) {
	epoch := time.Unix(1795888853, 0)
	a, err := Package(chart, t.TempDir(), "v1.2.0", epoch)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Package(chart, t.TempDir(), "v1.2.0", epoch)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(a) != "sovereign-0.1.0.tgz" {
		t.Errorf("archive %s", a)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if len(ab) == 0 || string(ab) != string(bb) {
		t.Error("two packagings of the same sources differ")
	}
	l := action.NewLint()
	l.Strict = true
	if res := l.Run([]string{a}, nil); len(res.Errors) > 0 || res.TotalChartsLinted != 1 {
		t.Errorf("lint of the archive: %v", res.Errors)
	}
	r, err := Render(a, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dep := only[*appsv1.Deployment](t, objects(t, r))
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "sovereign:v1.2.0-models" {
		t.Errorf("the archive deploys %s, want the release's -models image", img)
	}
}
