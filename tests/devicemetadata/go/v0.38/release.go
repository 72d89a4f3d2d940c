// What k8s.io/dynamic-resource-allocation v0.38.0-beta.0 needs that v0.36 does not (see ../shared/vectors.go): the
// same as v0.37, whose metadata writer and decoder it carries unchanged.
package main

import (
	"bytes"
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/dynamic-resource-allocation/api/metadata/v1alpha1"
	"k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/devicemetadata"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

const module = "k8s.io/dynamic-resource-allocation@v0.38.0-beta.0"

// v0.38 insists on the latest version (v1beta1) and accepts v1alpha1 as well; newest first, as
// its EnableDeviceMetadata documentation recommends, so that v0.36 readers still find v1alpha1.
var metadataVersions = []schema.GroupVersion{v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion}

func releaseOptions() []kubeletplugin.Option {
	return []kubeletplugin.Option{
		kubeletplugin.EnableDeviceMetadata(true, metadataVersions),
		kubeletplugin.HealthService(false),
	}
}

// releasePlugin: the v0.38 DRAPlugin interface adds health reporting, which these drivers lack.
type releasePlugin struct{}

func (releasePlugin) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

// decodeStream decodes into the newest versioned type (v1beta1) without TypeMeta, with the
// release's declarative validation switched on (reported, not fatal).
func decodeStream(data []byte) DecodedFile {
	var dm v1beta1.DeviceMetadata
	var validationErr error
	var gvk schema.GroupVersionKind
	err := devicemetadata.DecodeMetadataFromStream(json.NewDecoder(bytes.NewReader(data)), &dm,
		devicemetadata.DecodeMetadataWithValidationResult(&validationErr),
		devicemetadata.DecodeMetadataStoreGVKResult(&gvk),
	)
	if err != nil {
		return DecodedFile{Error: err.Error()}
	}
	dm.TypeMeta = metav1.TypeMeta{}
	object, err := json.Marshal(&dm)
	if err != nil {
		return DecodedFile{Error: err.Error()}
	}
	out := DecodedFile{DecodedVersion: gvk.GroupVersion().String(), Object: object}
	if validationErr != nil {
		out.ValidationError = validationErr.Error()
	}
	return out
}
