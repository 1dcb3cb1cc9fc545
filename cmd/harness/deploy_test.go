//go:build linux

package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The deployment files docs/deploy.md describes, relative to this package.
const (
	kubernetesYAML = "../../deploy/kubernetes.yaml"
	containerfile  = "../../deploy/Containerfile"
)

// k8sObject is the part of a Kubernetes object the checks below read.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	StringData map[string]string `yaml:"stringData"`
	Data       map[string]string `yaml:"data"`
	Spec       struct {
		Template struct {
			Metadata struct {
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
	Containers                    []container `yaml:"containers"`
	Volumes                       []struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

type container struct {
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe probe `yaml:"readinessProbe"`
	LivenessProbe  probe `yaml:"livenessProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// loadManifest parses every document of deploy/kubernetes.yaml, keyed by kind.
func loadManifest(t *testing.T) map[string]k8sObject {
	t.Helper()
	raw, err := os.ReadFile(kubernetesYAML)
	require.NoError(t, err)
	objs := map[string]k8sObject{}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "deploy/kubernetes.yaml parses")
		require.NotEmpty(t, o.Kind, "every document has a kind")
		require.NotContains(t, objs, o.Kind, "one object of each kind")
		objs[o.Kind] = o
	}
	return objs
}

// serveFlags lists the flags `harness serve --help` documents.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	bin, err := buildOnce()
	require.NoError(t, err)
	out, err := exec.Command(bin, "serve", "--help").Output()
	require.NoError(t, err)
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	require.NotEmpty(t, flags, "serve --help lists flags:\n%s", out)
	return flags
}

// flagValues maps each --name=value (or --name value) of args to its values.
func flagValues(t *testing.T, args []string) map[string][]string {
	t.Helper()
	vals := map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, val, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			require.Less(t, i+1, len(args), "%s has a value", a)
			i++
			val = args[i]
		}
		vals[name] = append(vals[name], val)
	}
	return vals
}

// TestKubernetesManifest checks deploy/kubernetes.yaml against the binary: the
// Deployment runs `harness serve` with flags serve --help lists; the token
// file and the principals file it names are the Secret's and the
// ConfigMap's keys mounted where it looks; the tokens are SUBJECT
// sha256:HEX64 lines for exactly the principals the ConfigMap lists; both
// probes ask /healthz on the listen port; the grace period outlasts
// --shutdown-timeout; the Ingress pins a session by its Authorization header.
func TestKubernetesManifest(t *testing.T) {
	objs := loadManifest(t)
	for _, kind := range []string{"Namespace", "Secret", "ConfigMap", "PersistentVolumeClaim", "Deployment", "Service", "Ingress"} {
		require.Contains(t, objs, kind)
	}
	pod := objs["Deployment"].Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.NotEmpty(t, c.Args)
	assert.Equal(t, "serve", c.Args[0])

	known := serveFlags(t)
	vals := flagValues(t, c.Args[1:])
	for name := range vals {
		assert.True(t, known[name], "--%s is a flag of harness serve", name)
	}

	// --listen's port is the container's port the probes ask;
	// --metrics-listen's is the one the scrape annotations name (issue 39).
	require.Len(t, vals["listen"], 1)
	require.Len(t, c.Ports, 2)
	assert.True(t, strings.HasSuffix(vals["listen"][0], ":"+strconv.Itoa(c.Ports[0].ContainerPort)), "--listen %s on the container port %d", vals["listen"][0], c.Ports[0].ContainerPort)
	for _, p := range []probe{c.ReadinessProbe, c.LivenessProbe} {
		assert.Equal(t, "/healthz", p.HTTPGet.Path)
		assert.Equal(t, c.Ports[0].Name, p.HTTPGet.Port)
	}
	require.Len(t, vals["metrics-listen"], 1)
	assert.Equal(t, "metrics", c.Ports[1].Name)
	assert.True(t, strings.HasSuffix(vals["metrics-listen"][0], ":"+strconv.Itoa(c.Ports[1].ContainerPort)), "--metrics-listen %s on the container port %d", vals["metrics-listen"][0], c.Ports[1].ContainerPort)
	ann := objs["Deployment"].Spec.Template.Metadata.Annotations
	assert.Equal(t, "true", ann["prometheus.io/scrape"])
	assert.Equal(t, strconv.Itoa(c.Ports[1].ContainerPort), ann["prometheus.io/port"])
	assert.Equal(t, "/metrics", ann["prometheus.io/path"])

	// The grace period outlasts the drain.
	require.Len(t, vals["shutdown-timeout"], 1)
	drain, err := time.ParseDuration(vals["shutdown-timeout"][0])
	require.NoError(t, err)
	assert.Greater(t, time.Duration(pod.TerminationGracePeriodSeconds)*time.Second, drain)

	// mountedKey says which volume's key a file path is: the volume
	// mounted on its directory, and the file's name.
	mountedKey := func(file string) (volume, key string) {
		for _, m := range c.VolumeMounts {
			if path.Dir(file) == m.MountPath {
				return m.Name, path.Base(file)
			}
		}
		t.Fatalf("no volume is mounted on %s", path.Dir(file))
		return "", ""
	}
	volumeOf := func(name string) (secret, configMap string) {
		for _, v := range pod.Volumes {
			if v.Name == name {
				if v.Secret != nil {
					secret = v.Secret.SecretName
				}
				if v.ConfigMap != nil {
					configMap = v.ConfigMap.Name
				}
				return secret, configMap
			}
		}
		t.Fatalf("no volume %s", name)
		return "", ""
	}

	require.Len(t, vals["token-file"], 1)
	vol, key := mountedKey(vals["token-file"][0])
	secret, _ := volumeOf(vol)
	assert.Equal(t, objs["Secret"].Metadata.Name, secret, "--token-file is the Secret's")
	tokens, ok := objs["Secret"].StringData[key]
	require.True(t, ok, "the Secret has the key %s", key)

	require.Len(t, vals["principals"], 1)
	vol, key = mountedKey(vals["principals"][0])
	_, cm := volumeOf(vol)
	assert.Equal(t, objs["ConfigMap"].Metadata.Name, cm, "--principals is the ConfigMap's")
	principalsYAML, ok := objs["ConfigMap"].Data[key]
	require.True(t, ok, "the ConfigMap has the key %s", key)
	var principals struct {
		Principals map[string]struct {
			Workspaces []string `yaml:"workspaces"`
			Mode       string   `yaml:"mode"`
			WidestMode string   `yaml:"widest-mode"`
			MaxCalls   int      `yaml:"max-concurrent-calls"`
		} `yaml:"principals"`
	}
	dec := yaml.NewDecoder(strings.NewReader(principalsYAML))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&principals))

	line := regexp.MustCompile(`^(\S+) sha256:[0-9a-f]{64}$`)
	subjects := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(tokens))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "a token line is SUBJECT sha256:HEX64: %q", l)
		subjects[m[1]] = true
	}
	require.NotEmpty(t, subjects)
	for name, p := range principals.Principals {
		assert.True(t, subjects[name], "principal %s has a token", name)
		assert.NotEmpty(t, p.Workspaces, "principal %s has workspaces", name)
		for _, ws := range p.Workspaces {
			assert.True(t, path.IsAbs(ws) && ws != "/", "principal %s: workspace %q is absolute, not /", name, ws)
		}
	}
	for s := range subjects {
		assert.Contains(t, principals.Principals, s, "token subject %s is a principal", s)
	}

	assert.Equal(t, "$http_authorization", objs["Ingress"].Metadata.Annotations["nginx.ingress.kubernetes.io/upstream-hash-by"])
	assert.Equal(t, "off", objs["Ingress"].Metadata.Annotations["nginx.ingress.kubernetes.io/proxy-buffering"])
}

// TestContainerfile checks deploy/Containerfile's default command: harness
// serve with flags serve --help lists, listening on the exposed port.
func TestContainerfile(t *testing.T) {
	raw, err := os.ReadFile(containerfile)
	require.NoError(t, err)
	var entry, cmd []string
	expose := ""
	for l := range strings.Lines(string(raw)) {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "ENTRYPOINT "):
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(l, "ENTRYPOINT ")), &entry), l)
		case strings.HasPrefix(l, "CMD "):
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(l, "CMD ")), &cmd), l)
		case strings.HasPrefix(l, "EXPOSE "):
			expose = strings.TrimPrefix(l, "EXPOSE ")
		}
	}
	assert.Equal(t, []string{"/usr/local/bin/harness"}, entry)
	require.NotEmpty(t, cmd)
	assert.Equal(t, "serve", cmd[0])
	known := serveFlags(t)
	vals := flagValues(t, cmd[1:])
	for name := range vals {
		assert.True(t, known[name], "--%s is a flag of harness serve", name)
	}
	require.Len(t, vals["listen"], 1)
	assert.Equal(t, "0.0.0.0:"+expose, vals["listen"][0])
	assert.Len(t, vals["token-file"], 1, "off loopback the server needs a token file")
	assert.Len(t, vals["principals"], 1)
}

// TestKubernetesManifestServes starts `harness serve` with the Deployment's
// own arguments, the Secret's token file and the ConfigMap's principals file
// (their /srv/agents workspaces moved under a temporary directory, which is
// made, and --listen moved to a free loopback port): the server accepts
// them together, prints its listening line, answers /healthz without a
// token, refuses a Host its --allowed-host does not name, answers a request
// without a token 401 naming the metadata of its --resource-url, serves
// that metadata, and on SIGTERM drains and exits 0.
func TestKubernetesManifestServes(t *testing.T) {
	objs := loadManifest(t)
	args := objs["Deployment"].Spec.Template.Spec.Containers[0].Args
	vals := flagValues(t, args[1:])
	tokenKey := path.Base(vals["token-file"][0])
	principalsKey := path.Base(vals["principals"][0])

	dir := t.TempDir()
	agents := filepath.Join(dir, "agents")
	principals := strings.ReplaceAll(objs["ConfigMap"].Data[principalsKey], "/srv/agents/", agents+"/")
	for _, who := range []string{"alice", "bob"} {
		require.Contains(t, principals, filepath.Join(agents, who), "the principals file names %s's workspace under /srv/agents", who)
		require.NoError(t, os.MkdirAll(filepath.Join(agents, who), 0o750))
	}
	tokenFile := filepath.Join(dir, tokenKey)
	require.NoError(t, os.WriteFile(tokenFile, []byte(objs["Secret"].StringData[tokenKey]), 0o600))
	principalsFile := filepath.Join(dir, principalsKey)
	require.NoError(t, os.WriteFile(principalsFile, []byte(principals), 0o600))

	run := []string{"serve"}
	for _, a := range args[1:] {
		switch name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "="); name {
		case "listen":
			a = "--listen=127.0.0.1:0"
		case "metrics-listen":
			a = "--metrics-listen=127.0.0.1:0"
		case "token-file":
			a = "--token-file=" + tokenFile
		case "principals":
			a = "--principals=" + principalsFile
		}
		run = append(run, a)
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	cmd := exec.Command(bin, run...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	listening := regexp.MustCompile(`^harness: listening on (http://127\.0\.0\.1:\d+)/mcp$`)
	found := make(chan string, 1)
	done := make(chan struct{}) // stderr read to its end
	var log strings.Builder
	go func() {
		defer close(done)
		defer close(found)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var base string
	select {
	case u, ok := <-found:
		require.True(t, ok, "harness exited before listening")
		base = u
	case <-time.After(30 * time.Second):
		t.Fatal("no listening line within 30 s")
	}

	resp, err := http.Get(base + "/healthz")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok\n", string(body))

	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Host = "rebound.example.com"
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a Host --allowed-host does not name")

	// Off loopback the manifest's server demands a token, and names the
	// public --resource-url in its challenge and its metadata.
	resp, err = http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a request without a token")
	require.Len(t, vals["resource-url"], 1)
	resource := vals["resource-url"][0]
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `resource_metadata="https://harness.example.com/.well-known/oauth-protected-resource/mcp"`)
	resp, err = http.Get(base + "/.well-known/oauth-protected-resource/mcp")
	require.NoError(t, err)
	var metadata struct {
		Resource string `json:"resource"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&metadata))
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, resource, metadata.Resource, "the metadata names --resource-url")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("harness still runs 60 s after SIGTERM")
	}
	require.NoError(t, cmd.Wait(), "harness exits 0 after SIGTERM; its stderr:\n%s", log.String())
}
