// What k8s.io/dynamic-resource-allocation v0.36.3 needs that v0.37 does not (see ../shared/vectors.go).
package main

import (
	"bytes"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/dynamic-resource-allocation/api/metadata/install"
	"k8s.io/dynamic-resource-allocation/api/metadata/v1alpha1"
	"k8s.io/dynamic-resource-allocation/devicemetadata"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

const module = "k8s.io/dynamic-resource-allocation@v0.36.3"

// v1alpha1 is the only version v0.36 knows; it has no default and must be set explicitly.
var metadataVersions = []schema.GroupVersion{v1alpha1.SchemeGroupVersion}

func releaseOptions() []kubeletplugin.Option {
	return []kubeletplugin.Option{
		kubeletplugin.EnableDeviceMetadata(true),
		kubeletplugin.MetadataVersions(metadataVersions...),
	}
}

// releasePlugin: the v0.36 DRAPlugin interface needs nothing beyond prepare, unprepare and errors.
type releasePlugin struct{}

// decodeStream decodes into the newest versioned type (v1alpha1) without TypeMeta.
func decodeStream(data []byte) DecodedFile {
	var dm v1alpha1.DeviceMetadata
	if err := devicemetadata.DecodeMetadataFromStream(json.NewDecoder(bytes.NewReader(data)), &dm); err != nil {
		return DecodedFile{Error: err.Error()}
	}
	dm.TypeMeta = metav1.TypeMeta{}
	object, err := json.Marshal(&dm)
	if err != nil {
		return DecodedFile{Error: err.Error()}
	}
	return DecodedFile{DecodedVersion: firstRegisteredVersion(data), Object: object}
}

// firstRegisteredVersion: v0.36 cannot report which object it used; it is the first one of a
// registered version, so look for that the same way.
func firstRegisteredVersion(data []byte) string {
	scheme := install.NewScheme()
	decoder := json.NewDecoder(bytes.NewReader(data))
	for decoder.More() {
		var tm metav1.TypeMeta
		if decoder.Decode(&tm) != nil {
			return ""
		}
		if gv, err := schema.ParseGroupVersion(tm.APIVersion); err == nil && scheme.IsVersionRegistered(gv) {
			return gv.String()
		}
	}
	return ""
}
