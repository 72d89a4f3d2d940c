// Command vectors makes device-metadata test vectors with the real kubelet-plugin helper of
// k8s.io/dynamic-resource-allocation, and decodes files with the real upstream decoder.
//
// Rules: every metadata file and CDI spec is written by the released helper itself
// (kubeletplugin.Start, then NodePrepareResources / NodeUnprepareResources over its own gRPC
// service and Helper.UpdateRequestMetadata), never by code in this file; decoding goes through
// devicemetadata.DecodeMetadataFromStream only. Files are written under umask 022, as on a node.
// This file is shared (symlinked) by one Go module per release; what differs between releases
// lives in each module's release.go.
//
//	vectors generate SCENARIO OUTDIR   run the scenario's steps, write OUTDIR/node and OUTDIR/results.json
//	vectors decode FILE...             print each file as the upstream decoder sees it (JSON on stdout)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// Scenario is tests/devicemetadata/go/scenario.json; the Python tests read the same file.
type Scenario struct {
	Claims map[string]ScenarioClaim `json:"claims"`
	Steps  []Step                   `json:"steps"`
}

type ScenarioClaim struct {
	Namespace    string  `json:"namespace"`
	Name         string  `json:"name"`
	UID          string  `json:"uid"`
	PodClaimName *string `json:"podClaimName,omitempty"`
}

type Step struct {
	Op          string           `json:"op"` // prepare, update, unprepare
	Driver      string           `json:"driver"`
	Claim       string           `json:"claim"`
	Request     string           `json:"request,omitempty"` // update only
	Devices     []ScenarioDevice `json:"devices,omitempty"`
	ExpectError bool             `json:"expectError,omitempty"`
}

type ScenarioDevice struct {
	Requests     []string `json:"requests"`
	Pool         string   `json:"pool"`
	Device       string   `json:"device"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs,omitempty"`
	Metadata     *struct {
		Attributes  map[string]resourceapi.DeviceAttribute `json:"attributes"`
		NetworkData *resourceapi.NetworkDeviceData         `json:"networkData"`
	} `json:"metadata,omitempty"`
}

func (d ScenarioDevice) helperDevice() kubeletplugin.Device {
	dev := kubeletplugin.Device{
		Requests:     d.Requests,
		PoolName:     d.Pool,
		DeviceName:   d.Device,
		CDIDeviceIDs: d.CDIDeviceIDs,
	}
	if d.Metadata != nil {
		dev.Metadata = &kubeletplugin.DeviceMetadata{
			Attributes:  d.Metadata.Attributes,
			NetworkData: d.Metadata.NetworkData,
		}
	}
	return dev
}

// Results is OUTDIR/results.json.
type Results struct {
	Module   string       `json:"module"`
	Versions []string     `json:"versions"`
	Root     string       `json:"root"`
	Steps    []StepResult `json:"steps"`
}

type StepResult struct {
	Step
	Error    string                 `json:"error,omitempty"`
	Response []ResponseDevice       `json:"response,omitempty"`
	Files    map[string]FileEntry   `json:"files"`
	Decoded  map[string]DecodedFile `json:"decoded"`
}

type ResponseDevice struct {
	RequestNames []string `json:"requestNames"`
	PoolName     string   `json:"poolName"`
	DeviceName   string   `json:"deviceName"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs"`
}

type FileEntry struct {
	Mode string  `json:"mode"`
	Data *string `json:"data,omitempty"` // nil for directories
}

// DecodedFile is what the upstream decoder makes of one metadata file.
type DecodedFile struct {
	Path            string          `json:"path,omitempty"`
	Error           string          `json:"error,omitempty"`
	ValidationError string          `json:"validationError,omitempty"`
	DecodedVersion  string          `json:"decodedVersion,omitempty"`
	Object          json.RawMessage `json:"object,omitempty"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 3 && args[0] == "generate":
		return generate(args[1], args[2])
	case len(args) >= 1 && args[0] == "decode":
		out := make([]DecodedFile, 0, len(args)-1)
		for _, path := range args[1:] {
			d := decodeFile(path)
			d.Path = path
			out = append(out, d)
		}
		return writeJSON(os.Stdout, out)
	case len(args) == 1 && args[0] == "version":
		fmt.Println(module)
		return nil
	default:
		return errors.New("usage: vectors generate SCENARIO OUTDIR | vectors decode FILE... | vectors version")
	}
}

func decodeFile(path string) DecodedFile {
	data, err := os.ReadFile(path)
	if err != nil {
		return DecodedFile{Error: err.Error()}
	}
	return decodeStream(data)
}

func writeJSON(f *os.File, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	return err
}

func generate(scenarioPath, outDir string) error {
	raw, err := os.ReadFile(scenarioPath)
	if err != nil {
		return err
	}
	var scenario Scenario
	if err := json.Unmarshal(raw, &scenario); err != nil {
		return fmt.Errorf("parse %s: %w", scenarioPath, err)
	}
	syscall.Umask(0o022)
	root, err := filepath.Abs(filepath.Join(outDir, "node"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	apiServer := serveClaims(scenario.Claims)
	defer apiServer.Close()
	kubeClient, err := kubernetes.NewForConfig(&rest.Config{
		Host:          apiServer.URL,
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"},
	})
	if err != nil {
		return err
	}

	drivers := map[string]*driver{}
	defer func() {
		for _, d := range drivers {
			d.stop()
		}
	}()
	results := Results{Module: module, Versions: versionStrings(), Root: root}
	for i, step := range scenario.Steps {
		d, ok := drivers[step.Driver]
		if !ok {
			d, err = startDriver(ctx, step.Driver, root, kubeClient)
			if err != nil {
				return fmt.Errorf("start %s: %w", step.Driver, err)
			}
			drivers[step.Driver] = d
		}
		claim, ok := scenario.Claims[step.Claim]
		if !ok {
			return fmt.Errorf("step %d: unknown claim %q", i, step.Claim)
		}
		result := StepResult{Step: step}
		var stepErr error
		switch step.Op {
		case "prepare":
			result.Response, stepErr = d.prepare(ctx, claim, step.Devices)
		case "update":
			devices := make([]kubeletplugin.Device, 0, len(step.Devices))
			for _, dev := range step.Devices {
				devices = append(devices, dev.helperDevice())
			}
			stepErr = d.helper.UpdateRequestMetadata(ctx, claim.Namespace, claim.Name, types.UID(claim.UID), step.Request, devices)
		case "unprepare":
			stepErr = d.unprepare(ctx, claim)
		default:
			return fmt.Errorf("step %d: unknown op %q", i, step.Op)
		}
		if stepErr != nil {
			if !step.ExpectError {
				return fmt.Errorf("step %d (%s %s %s): %w", i, step.Op, step.Driver, step.Claim, stepErr)
			}
			result.Error = stepErr.Error()
		} else if step.ExpectError {
			return fmt.Errorf("step %d (%s %s %s): expected an error", i, step.Op, step.Driver, step.Claim)
		}
		if result.Files, result.Decoded, err = snapshot(root); err != nil {
			return err
		}
		results.Steps = append(results.Steps, result)
	}
	f, err := os.Create(filepath.Join(outDir, "results.json"))
	if err != nil {
		return err
	}
	defer f.Close()
	return writeJSON(f, results)
}

// serveClaims is a stand-in API server: just enough for the helper's ResourceClaim GETs.
func serveClaims(claims map[string]ScenarioClaim) *httptest.Server {
	byPath := map[string]*resourceapi.ResourceClaim{}
	for _, c := range claims {
		claim := &resourceapi.ResourceClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name, UID: types.UID(c.UID)},
			Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}},
		}
		if c.PodClaimName != nil {
			claim.Annotations = map[string]string{resourceapi.PodResourceClaimAnnotation: *c.PodClaimName}
		}
		byPath[fmt.Sprintf("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", c.Namespace, c.Name)] = claim
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claim, ok := byPath[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(claim)
	}))
}

// driver is one DRA driver process: the real helper, reached over its own gRPC service.
type driver struct {
	helper *kubeletplugin.Helper
	plugin *plugin
	conn   *grpc.ClientConn
	client drapb.DRAPluginClient
}

func startDriver(ctx context.Context, name, root string, kubeClient kubernetes.Interface) (*driver, error) {
	listener := bufconn.Listen(1 << 20)
	p := &plugin{}
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(name),
		kubeletplugin.KubeClient(kubeClient),
		kubeletplugin.PluginDataDirectoryPath(filepath.Join(root, "plugins", name)),
		kubeletplugin.CDIDirectory(filepath.Join(root, "cdi")),
		kubeletplugin.RegistrationService(false),
		kubeletplugin.PluginListener(func(context.Context, string) (net.Listener, error) { return listener, nil }),
	}
	helper, err := kubeletplugin.Start(ctx, p, append(opts, releaseOptions()...)...)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient("passthrough:///"+name,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return listener.DialContext(ctx) }),
	)
	if err != nil {
		helper.Stop()
		return nil, err
	}
	return &driver{helper: helper, plugin: p, conn: conn, client: drapb.NewDRAPluginClient(conn)}, nil
}

func (d *driver) stop() {
	_ = d.conn.Close()
	d.helper.Stop()
}

func (d *driver) prepare(ctx context.Context, claim ScenarioClaim, devices []ScenarioDevice) ([]ResponseDevice, error) {
	prepared := make([]kubeletplugin.Device, 0, len(devices))
	for _, dev := range devices {
		prepared = append(prepared, dev.helperDevice())
	}
	d.plugin.next = map[types.UID]kubeletplugin.PrepareResult{types.UID(claim.UID): {Devices: prepared}}
	resp, err := d.client.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{
		Claims: []*drapb.Claim{{Namespace: claim.Namespace, Name: claim.Name, Uid: claim.UID}},
	})
	if err != nil {
		return nil, err
	}
	result := resp.Claims[claim.UID]
	if result == nil || result.Error != "" {
		return nil, fmt.Errorf("prepare %s/%s: %v", claim.Namespace, claim.Name, result)
	}
	out := make([]ResponseDevice, 0, len(result.Devices))
	for _, dev := range result.Devices {
		out = append(out, ResponseDevice{
			RequestNames: dev.RequestNames,
			PoolName:     dev.PoolName,
			DeviceName:   dev.DeviceName,
			CDIDeviceIDs: append([]string{}, dev.CdiDeviceIds...),
		})
	}
	return out, nil
}

func (d *driver) unprepare(ctx context.Context, claim ScenarioClaim) error {
	resp, err := d.client.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{
		Claims: []*drapb.Claim{{Namespace: claim.Namespace, Name: claim.Name, Uid: claim.UID}},
	})
	if err != nil {
		return err
	}
	if result := resp.Claims[claim.UID]; result == nil || result.Error != "" {
		return fmt.Errorf("unprepare %s/%s: %v", claim.Namespace, claim.Name, result)
	}
	return nil
}

// plugin is the driver's own part: it hands the helper the devices of the current step.
type plugin struct {
	releasePlugin
	next map[types.UID]kubeletplugin.PrepareResult
}

func (p *plugin) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		result, ok := p.next[c.UID]
		if !ok {
			result.Err = fmt.Errorf("claim %s not in this step", c.UID)
		}
		out[c.UID] = result
	}
	return out, nil
}

func (p *plugin) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := map[types.UID]error{}
	for _, c := range claims {
		out[c.UID] = nil
	}
	return out, nil
}

func (p *plugin) HandleError(_ context.Context, err error, msg string) {
	fmt.Fprintf(os.Stderr, "helper error: %s: %v\n", msg, err)
}

// snapshot records every file and directory under root (paths relative to it), and decodes
// each metadata.json with the upstream decoder.
func snapshot(root string) (map[string]FileEntry, map[string]DecodedFile, error) {
	files := map[string]FileEntry{}
	decoded := map[string]DecodedFile{}
	err := filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		info, err := entry.Info()
		if err != nil {
			return err
		}
		fe := FileEntry{Mode: fmt.Sprintf("%04o", info.Mode().Perm())}
		if !entry.IsDir() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s := string(data)
			fe.Data = &s
			if strings.HasSuffix(rel, "/metadata.json") {
				decoded[rel] = decodeStream(data)
			}
		}
		files[rel] = fe
		return nil
	})
	return files, decoded, err
}

func versionStrings() []string {
	out := make([]string, 0, len(metadataVersions))
	for _, gv := range metadataVersions {
		out = append(out, gv.String())
	}
	return out
}
