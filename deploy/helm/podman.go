package helmchart

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// PodmanPlan is what WritePodman wrote: the files scripts/helm-test.sh
// hands to podman, in the order Helm would apply them.
type PodmanPlan struct {
	Secrets []string // secrets/NAME.json: `podman secret create NAME FILE`
	Migrate string   // migrate.yaml: the hook Job's pod; empty without PostgreSQL
	Servers []string // server-N.yaml: one per replica
}

// WritePodman turns a rendered release into what podman 4.3's `kube play`
// runs, changing only what podman cannot take as it is:
//
//   - Secrets become podman secrets: kube play 4.3 stores a `kind: Secret`
//     in a form its own secretKeyRef cannot read back, and reads a
//     secret's value from a JSON object of base64 values (the Secret's
//     data), which is what secrets/NAME.json holds.
//   - The pre-install hook Job becomes a Pod of its template (kube play has
//     no Job), to be run to completion before the server's pods.
//   - The Deployment becomes one Pod per replica, named NAME-0, NAME-1, …
//     from its template, each played on its own, because kube play 4.3
//     gives every emptyDir of every replica the one named volume of the
//     volume's name (the replicas would share /data, and the second
//     server could not lock the records spool), and publishes each
//     containerPort on the host (Kubernetes does not), where two replicas
//     collide. So each emptyDir becomes a named volume of the pod's own
//     (POD-VOLUME) and the container ports are left out; the script
//     reaches each pod in its own network namespace, as a kubelet does.
//   - Probes are left out: kube play turns them into a `curl` run inside
//     the container (the image has neither curl nor a shell) on a systemd
//     timer. The script probes /livez and /readyz from outside instead.
//   - restartPolicy is Never, so that a server that exits fails the test
//     instead of being restarted out of sight.
//   - Annotations longer than 63 characters (the checksums that roll the
//     pods) are left out: kube play 4.3 holds annotations to the limit of
//     label values, which Kubernetes does not.
//
// Everything else — the image, command, environment, secretKeyRefs,
// security context, volumes and mounts, resources — is the rendered pod's.
func WritePodman(r *Rendered, dir string) (*PodmanPlan, error) {
	if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o700); err != nil {
		return nil, err
	}
	plan := &PodmanPlan{}
	var configMaps [][]byte
	for _, d := range r.Docs {
		obj, err := Decode(d)
		if err != nil {
			return nil, err
		}
		switch o := obj.(type) {
		case *corev1.Secret:
			data := map[string][]byte{}
			for k, v := range o.Data {
				data[k] = v
			}
			for k, v := range o.StringData {
				data[k] = []byte(v)
			}
			b, err := json.Marshal(data) // []byte values marshal as base64
			if err != nil {
				return nil, err
			}
			name := filepath.Join(dir, "secrets", o.Name+".json")
			if err := os.WriteFile(name, b, 0o600); err != nil {
				return nil, err
			}
			plan.Secrets = append(plan.Secrets, name)
		case *corev1.ConfigMap:
			// kube play reads ConfigMaps given in the same file as the pod.
			configMaps = append(configMaps, d.YAML)
		}
	}
	write := func(name string, pod *corev1.Pod) (string, error) {
		b, err := yaml.Marshal(pod)
		if err != nil {
			return "", err
		}
		var out []byte
		for _, cm := range configMaps {
			out = append(out, "---\n"...)
			out = append(out, cm...)
			out = append(out, '\n')
		}
		out = append(out, "---\n"...)
		out = append(out, b...)
		path := filepath.Join(dir, name)
		return path, os.WriteFile(path, out, 0o600)
	}
	for _, d := range r.Docs {
		if d.Kind != "Job" || !d.isHook(release.HookPreInstall) {
			continue
		}
		obj, _ := Decode(d)
		job := obj.(*batchv1.Job)
		path, err := write("migrate.yaml", podmanPod(job.Name, job.Spec.Template))
		if err != nil {
			return nil, err
		}
		plan.Migrate = path
	}
	deps := r.Find("Deployment")
	if len(deps) != 1 {
		return nil, fmt.Errorf("want one Deployment, rendered %d", len(deps))
	}
	obj, _ := Decode(deps[0])
	dep := obj.(*appsv1.Deployment)
	n := 1
	if dep.Spec.Replicas != nil {
		n = int(*dep.Spec.Replicas)
	}
	for i := range n {
		name := fmt.Sprintf("%s-%d", dep.Name, i)
		path, err := write(fmt.Sprintf("server-%d.yaml", i), podmanPod(name, dep.Spec.Template))
		if err != nil {
			return nil, err
		}
		plan.Servers = append(plan.Servers, path)
	}
	return plan, nil
}

// podmanPod is the Pod named name of a pod template, changed as
// WritePodman says.
func podmanPod(name string, t corev1.PodTemplateSpec) *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: *t.ObjectMeta.DeepCopy(),
		Spec:       *t.Spec.DeepCopy(),
	}
	pod.Name = name
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	for k, v := range pod.Annotations {
		if len(v) > 63 {
			delete(pod.Annotations, k)
		}
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.EmptyDir != nil {
			v.EmptyDir = nil
			v.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: strings.TrimSuffix(name+"-"+v.Name, "-"),
			}
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.Ports = nil
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
	}
	return pod
}
