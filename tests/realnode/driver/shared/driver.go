// Command driver is the real node's test DRA driver, built on the official kubelet-plugin helper
// (k8s.io/dynamic-resource-allocation/kubeletplugin) of one Kubernetes release.
//
// Rules:
//  1. Everything a DRA driver does with the kubelet and the API server goes through the helper:
//     registration on the kubelet's plugin socket, the DRA gRPC service (NodePrepareResources,
//     NodeUnprepareResources), publishing ResourceSlices (Helper.PublishResources and its controller,
//     which bumps the pool generation), device metadata (EnableDeviceMetadata, UpdateRequestMetadata)
//     and rolling updates (RollingUpdate). Nothing of upstream is copied here.
//  2. What is published is read from --devices: a JSON file {"pools": {NAME: {"generation": N,
//     "slices": [{"devices": [DEVICE, ...]}]}}} whose devices are resource.k8s.io/v1 Devices in the
//     release's own JSON (the tests write the NUMA attributes and node-allocatable mappings in the
//     release's shape), decoded with the release's Go types.
//  3. Prepare writes one CDI spec per claim, {cdi}/{driver}_claim_{uid}.json, kind {driver}/claim,
//     one device per allocated device that sets DRA_<DEVICE>=<driver>/<pool>/<device> in the container. The
//     device metadata is the device's published attributes, written either by the helper
//     (--metadata=helper) or by the Python writer draledger.devicemetadata (--metadata=python, through
//     --python-writer, a command that reads one JSON request on stdin and answers on stdout), or not at
//     all (--metadata=off).
//  4. The driver is stateless across calls, as RollingUpdate requires: what it prepared (for the Python
//     writer's rebuild at start) is kept in {plugin dir}/prepared.json, under the helper's serialization.
//  5. Once the kubelet has registered the plugin, a control server on 127.0.0.1 starts, and its port is
//     written to --control (so the file says "registered and ready"); it lets the tests republish
//     (POST /publish, the same JSON as --devices), update a request's metadata (POST /metadata) and pace
//     the driver's writes to the API server (POST /pace?every=2s: each write waits that long first).
//  6. Every prepare and unprepare is logged on stderr as one JSON line, with this process's --instance.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

const podClaimAnnotation = "resource.kubernetes.io/pod-claim-name"

type config struct {
	driver, node, kubeconfig, registryDir, pluginDir, cdiDir string
	devices, metadata, pythonWriter, control, instance       string
	rollingUID                                               string
	qps                                                      float64
	burst                                                    int
}

func main() {
	var c config
	flag.StringVar(&c.driver, "driver", "", "driver name")
	flag.StringVar(&c.node, "node", "", "node name")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the driver's identity")
	flag.StringVar(&c.registryDir, "registry-dir", "", "the kubelet's plugins_registry directory")
	flag.StringVar(&c.pluginDir, "plugin-dir", "", "this driver's plugin data directory")
	flag.StringVar(&c.cdiDir, "cdi-dir", "", "the CDI spec directory of the container runtime")
	flag.StringVar(&c.devices, "devices", "", "JSON file of the pools to publish")
	flag.StringVar(&c.metadata, "metadata", "helper", "who writes device metadata: helper, python or off")
	flag.StringVar(&c.pythonWriter, "python-writer", "", "command (JSON-encoded argv) of the Python metadata writer")
	flag.StringVar(&c.control, "control", "", "file to write the control server's port into")
	flag.StringVar(&c.instance, "instance", "1", "a name for this process in the log")
	flag.StringVar(&c.rollingUID, "rolling-update-uid", "", "enable rolling updates with this instance UID")
	flag.Float64Var(&c.qps, "qps", 50, "API client QPS")
	flag.IntVar(&c.burst, "burst", 100, "API client burst")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	for name, value := range map[string]string{"driver": c.driver, "node": c.node, "kubeconfig": c.kubeconfig,
		"registry-dir": c.registryDir, "plugin-dir": c.pluginDir, "cdi-dir": c.cdiDir, "devices": c.devices} {
		if value == "" {
			return fmt.Errorf("--%s is required", name)
		}
	}
	if c.metadata != "helper" && c.metadata != "python" && c.metadata != "off" {
		return fmt.Errorf("--metadata: %q is not helper, python or off", c.metadata)
	}
	var writer []string
	if c.metadata == "python" {
		if err := json.Unmarshal([]byte(c.pythonWriter), &writer); err != nil || len(writer) == 0 {
			return fmt.Errorf("--python-writer must be a non-empty JSON list of strings: %v", err)
		}
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	restConfig.QPS, restConfig.Burst = float32(c.qps), c.burst
	d := &driver{config: c, writer: writer}
	restConfig.Wrap(func(next http.RoundTripper) http.RoundTripper { return &pacedWrites{driver: d, next: next} })
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	pools, err := readPools(c.devices)
	if err != nil {
		return err
	}
	for _, dir := range []string{c.pluginDir, c.cdiDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d.pools = pools
	if c.metadata == "python" {
		if err := d.rebuild(); err != nil {
			return fmt.Errorf("rebuild the metadata of prepared claims: %w", err)
		}
	}
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(c.driver),
		kubeletplugin.NodeName(c.node),
		kubeletplugin.KubeClient(client),
		kubeletplugin.RegistrarDirectoryPath(c.registryDir),
		kubeletplugin.PluginDataDirectoryPath(c.pluginDir),
	}
	if c.rollingUID != "" {
		opts = append(opts, kubeletplugin.RollingUpdate(types.UID(c.rollingUID)))
	}
	opts = append(opts, releaseOptions(c.metadata == "helper", c.cdiDir)...)
	helper, err := kubeletplugin.Start(ctx, d, opts...)
	if err != nil {
		return fmt.Errorf("start the kubelet plugin helper: %w", err)
	}
	d.helper = helper
	defer helper.Stop()
	if err := d.publish(ctx, pools); err != nil {
		return err
	}
	if err := d.awaitRegistration(ctx); err != nil {
		return err
	}
	if c.control != "" {
		if err := d.serveControl(ctx); err != nil {
			return err
		}
	}
	d.log("started", map[string]any{"metadata": c.metadata, "rollingUpdate": c.rollingUID})
	<-ctx.Done()
	d.log("stopping", nil)
	return nil
}

// awaitRegistration waits until the kubelet has told the helper's registrar that it registered the plugin.
func (d *driver) awaitRegistration(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		status := d.helper.RegistrationStatus()
		if status.GetPluginRegistered() {
			d.log("registered", nil)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kubelet did not register the plugin within a minute (status %v)", status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ------------------------------------------------------------------ what is published

type poolsFile struct {
	Pools map[string]struct {
		Generation int64 `json:"generation"`
		Slices     []struct {
			Devices []resourceapi.Device `json:"devices"`
		} `json:"slices"`
	} `json:"pools"`
}

func readPools(path string) (poolsFile, error) {
	var pools poolsFile
	data, err := os.ReadFile(path)
	if err != nil {
		return pools, err
	}
	return pools, decodePools(data, &pools)
}

func decodePools(data []byte, pools *poolsFile) error {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields() // a field this release does not know is a test error, not a silent drop
	if err := decoder.Decode(pools); err != nil {
		return fmt.Errorf("devices: %w", err)
	}
	if len(pools.Pools) == 0 {
		return errors.New("devices: no pool")
	}
	return nil
}

func (d *driver) publish(ctx context.Context, pools poolsFile) error {
	resources := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{}}
	for name, pool := range pools.Pools {
		out := resourceslice.Pool{Generation: pool.Generation}
		for _, slice := range pool.Slices {
			out.Slices = append(out.Slices, resourceslice.Slice{Devices: slice.Devices})
		}
		resources.Pools[name] = out
	}
	d.mutex.Lock()
	d.pools = pools
	d.mutex.Unlock()
	return d.helper.PublishResources(ctx, resources)
}

func (d *driver) device(pool, name string) (resourceapi.Device, bool) {
	d.mutex.Lock()
	defer d.mutex.Unlock()
	for _, slice := range d.pools.Pools[pool].Slices {
		for _, device := range slice.Devices {
			if device.Name == name {
				return device, true
			}
		}
	}
	return resourceapi.Device{}, false
}

// ------------------------------------------------------------------ the DRA plugin

type driver struct {
	releasePlugin
	config config
	writer []string
	helper *kubeletplugin.Helper
	mutex  sync.Mutex
	pools  poolsFile
	pace   atomic.Int64 // nanoseconds to wait before each write to the API server (rule 5)
}

// pacedWrites delays every request but GET (and watches) by the driver's pace: a republish of several
// slices is then several writes that far apart, and the pool stays incomplete in between.
type pacedWrites struct {
	driver *driver
	next   http.RoundTripper
}

func (p *pacedWrites) RoundTrip(request *http.Request) (*http.Response, error) {
	if pace := time.Duration(p.driver.pace.Load()); pace > 0 && request.Method != http.MethodGet {
		select {
		case <-request.Context().Done():
			return nil, request.Context().Err()
		case <-time.After(pace):
		}
	}
	return p.next.RoundTrip(request)
}

// PrepareResourceClaims returns, per claim, one device per allocation result of this driver.
func (d *driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, claim := range claims {
		result, err := d.prepare(claim)
		if err != nil {
			result.Err = err
		}
		out[claim.UID] = result
		d.log("prepare", map[string]any{"claim": claim.Namespace + "/" + claim.Name, "uid": claim.UID,
			"devices": len(result.Devices), "error": errorText(err)})
	}
	return out, nil
}

func (d *driver) prepare(claim *resourceapi.ResourceClaim) (kubeletplugin.PrepareResult, error) {
	var result kubeletplugin.PrepareResult
	if claim.Status.Allocation == nil {
		return result, errors.New("not allocated")
	}
	var cdiDevices []map[string]any
	requests := map[string][]preparedDevice{}
	var order []string
	for _, allocated := range claim.Status.Allocation.Devices.Results {
		if allocated.Driver != d.config.driver {
			continue
		}
		device, ok := d.device(allocated.Pool, allocated.Device)
		if !ok {
			return result, fmt.Errorf("device %s/%s is not published by this driver", allocated.Pool, allocated.Device)
		}
		name := fmt.Sprintf("%s-%s", claim.UID, allocated.Device)
		env := fmt.Sprintf("DRA_%s=%s/%s/%s", envName(allocated.Device), d.config.driver, allocated.Pool, allocated.Device)
		cdiDevices = append(cdiDevices, map[string]any{"name": name, "containerEdits": map[string]any{"env": []string{env}}})
		prepared := kubeletplugin.Device{
			Requests:     []string{allocated.Request},
			PoolName:     allocated.Pool,
			DeviceName:   allocated.Device,
			CDIDeviceIDs: []string{d.config.driver + "/claim=" + name},
		}
		if d.config.metadata == "helper" {
			prepared.Metadata = &kubeletplugin.DeviceMetadata{Attributes: attributes(device)}
		}
		result.Devices = append(result.Devices, prepared)
		base := strings.SplitN(allocated.Request, "/", 2)[0]
		if _, seen := requests[base]; !seen {
			order = append(order, base)
		}
		requests[base] = append(requests[base], preparedDevice{Request: allocated.Request, Pool: allocated.Pool,
			Device: allocated.Device, Attributes: attributes(device)})
	}
	spec := map[string]any{"cdiVersion": "0.5.0", "kind": d.config.driver + "/claim", "devices": cdiDevices}
	if err := writeJSON(d.cdiSpec(claim.UID), spec); err != nil {
		return result, err
	}
	if d.config.metadata == "python" {
		state := preparedClaim{Namespace: claim.Namespace, Name: claim.Name, UID: string(claim.UID),
			PodClaimName: claim.Annotations[podClaimAnnotation]}
		for _, name := range order {
			state.Requests = append(state.Requests, preparedRequest{Name: name, Devices: requests[name]})
		}
		ids, err := d.callWriter(map[string]any{"op": "write", "claim": state})
		if err != nil {
			return result, err
		}
		// As the helper does: the metadata CDI device goes with the request's first device.
		for i := range result.Devices {
			base := strings.SplitN(result.Devices[i].Requests[0], "/", 2)[0]
			if id := ids[base]; id != "" {
				result.Devices[i].CDIDeviceIDs = append(result.Devices[i].CDIDeviceIDs, id)
				delete(ids, base)
			}
		}
		if err := d.remember(state, true); err != nil {
			return result, err
		}
	}
	return result, nil
}

// UnprepareResourceClaims removes the claim's CDI spec (and, in python mode, its metadata).
func (d *driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := map[types.UID]error{}
	for _, claim := range claims {
		err := os.Remove(d.cdiSpec(claim.UID))
		if errors.Is(err, os.ErrNotExist) {
			err = nil // idempotent: the kubelet may ask again
		}
		if err == nil && d.config.metadata == "python" {
			state := preparedClaim{Namespace: claim.Namespace, Name: claim.Name, UID: string(claim.UID)}
			if _, err = d.callWriter(map[string]any{"op": "remove", "claim": state}); err == nil {
				err = d.remember(state, false)
			}
		}
		out[claim.UID] = err
		d.log("unprepare", map[string]any{"claim": claim.Namespace + "/" + claim.Name, "uid": claim.UID,
			"error": errorText(err)})
	}
	return out, nil
}

func (d *driver) HandleError(ctx context.Context, err error, msg string) {
	d.log("error", map[string]any{"message": msg, "error": err.Error(),
		"recoverable": errors.Is(err, kubeletplugin.ErrRecoverable)})
}

func (d *driver) cdiSpec(uid types.UID) string {
	return filepath.Join(d.config.cdiDir, fmt.Sprintf("%s_claim_%s.json", d.config.driver, uid))
}

func attributes(device resourceapi.Device) map[string]resourceapi.DeviceAttribute {
	out := map[string]resourceapi.DeviceAttribute{}
	for name, value := range device.Attributes {
		out[string(name)] = value
	}
	return out
}

// ------------------------------------------------------------------ the Python writer (rule 3) and the state (rule 4)

type preparedDevice struct {
	Request    string                                 `json:"request"`
	Pool       string                                 `json:"pool"`
	Device     string                                 `json:"device"`
	Attributes map[string]resourceapi.DeviceAttribute `json:"attributes"`
}

type preparedRequest struct {
	Name    string           `json:"name"`
	Devices []preparedDevice `json:"devices"`
}

type preparedClaim struct {
	Namespace    string            `json:"namespace"`
	Name         string            `json:"name"`
	UID          string            `json:"uid"`
	PodClaimName string            `json:"podClaimName,omitempty"`
	Requests     []preparedRequest `json:"requests,omitempty"`
}

// callWriter runs the Python writer with one request; its answer maps request names to CDI device IDs.
func (d *driver) callWriter(request map[string]any) (map[string]string, error) {
	request["driver"], request["pluginDir"], request["cdiDir"] = d.config.driver, d.config.pluginDir, d.config.cdiDir
	body, err := json.Marshal(request)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(d.writer[0], d.writer[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("python writer %s: %v: %s", request["op"], err, strings.TrimSpace(stderr.String()))
	}
	answer := map[string]string{}
	if err := json.Unmarshal(stdout.Bytes(), &answer); err != nil {
		return nil, fmt.Errorf("python writer %s answered %q: %w", request["op"], stdout.String(), err)
	}
	return answer, nil
}

func (d *driver) statePath() string { return filepath.Join(d.config.pluginDir, "prepared.json") }

func (d *driver) load() (map[string]preparedClaim, error) {
	state := map[string]preparedClaim{}
	data, err := os.ReadFile(d.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return state, nil
	}
	if err != nil {
		return nil, err
	}
	return state, json.Unmarshal(data, &state)
}

func (d *driver) remember(claim preparedClaim, prepared bool) error {
	state, err := d.load()
	if err != nil {
		return err
	}
	if prepared {
		state[claim.UID] = claim
	} else {
		delete(state, claim.UID)
	}
	return writeJSON(d.statePath(), state)
}

// rebuild rewrites the metadata of every claim this driver prepared, from its own state (python mode).
func (d *driver) rebuild() error {
	state, err := d.load()
	if err != nil {
		return err
	}
	claims := make([]preparedClaim, 0, len(state))
	for _, claim := range state {
		claims = append(claims, claim)
	}
	sort.Slice(claims, func(i, j int) bool { return claims[i].UID < claims[j].UID })
	_, err = d.callWriter(map[string]any{"op": "rebuild", "claims": claims})
	d.log("rebuild", map[string]any{"claims": len(claims), "error": errorText(err)})
	return err
}

// ------------------------------------------------------------------ the control server (rule 5)

type metadataUpdate struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	UID       string           `json:"uid"`
	Request   string           `json:"request"`
	Devices   []preparedDevice `json:"devices"`
}

func (d *driver) serveControl(ctx context.Context) error {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /publish", func(w http.ResponseWriter, r *http.Request) {
		var pools poolsFile
		body, err := readBody(r)
		if err == nil {
			err = decodePools(body, &pools)
		}
		if err == nil {
			err = d.publish(r.Context(), pools)
		}
		answer(w, err)
	})
	mux.HandleFunc("POST /pace", func(w http.ResponseWriter, r *http.Request) {
		pace, err := time.ParseDuration(r.URL.Query().Get("every"))
		if err == nil {
			d.pace.Store(int64(pace))
		}
		answer(w, err)
	})
	mux.HandleFunc("POST /metadata", func(w http.ResponseWriter, r *http.Request) {
		var update metadataUpdate
		body, err := readBody(r)
		if err == nil {
			err = json.Unmarshal(body, &update)
		}
		if err == nil {
			err = d.updateMetadata(r.Context(), update)
		}
		answer(w, err)
	})
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(listener) }()
	go func() {
		<-ctx.Done()
		_ = server.Close()
	}()
	port := listener.Addr().(*net.TCPAddr).Port
	return os.WriteFile(d.config.control, []byte(fmt.Sprintf("%d\n", port)), 0o644)
}

func (d *driver) updateMetadata(ctx context.Context, update metadataUpdate) error {
	switch d.config.metadata {
	case "helper":
		devices := make([]kubeletplugin.Device, 0, len(update.Devices))
		for _, device := range update.Devices {
			devices = append(devices, kubeletplugin.Device{Requests: []string{device.Request}, PoolName: device.Pool,
				DeviceName: device.Device, Metadata: &kubeletplugin.DeviceMetadata{Attributes: device.Attributes}})
		}
		return d.helper.UpdateRequestMetadata(ctx, update.Namespace, update.Name, types.UID(update.UID), update.Request, devices)
	case "python":
		claim := preparedClaim{Namespace: update.Namespace, Name: update.Name, UID: update.UID,
			Requests: []preparedRequest{{Name: update.Request, Devices: update.Devices}}}
		_, err := d.callWriter(map[string]any{"op": "update", "claim": claim})
		return err
	}
	return errors.New("this driver writes no metadata")
}

func readBody(r *http.Request) ([]byte, error) {
	var buffer bytes.Buffer
	_, err := buffer.ReadFrom(http.MaxBytesReader(nil, r.Body, 1<<20))
	return buffer.Bytes(), err
}

func answer(w http.ResponseWriter, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// ------------------------------------------------------------------ small things

func writeJSON(path string, value any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// envName: DRA_<DEVICE> with the device name upper-cased and '-' and '.' made '_' (core-0 -> CORE_0).
func envName(device string) string {
	return strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(device))
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var logMutex sync.Mutex

func (d *driver) log(event string, fields map[string]any) {
	record := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "event": event,
		"instance": d.config.instance, "driver": d.config.driver}
	for key, value := range fields {
		record[key] = value
	}
	line, _ := json.Marshal(record)
	logMutex.Lock()
	defer logMutex.Unlock()
	fmt.Fprintln(os.Stderr, string(line))
}
