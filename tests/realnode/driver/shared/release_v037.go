// What k8s.io/dynamic-resource-allocation v0.37.2 and v0.38.0-beta.0 need that v0.36 does not (see driver.go):
// symlinked into the v1.37 and v1.38 modules as their release.go.
package main

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/dynamic-resource-allocation/api/metadata/v1alpha1"
	"k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// releaseOptions: the health service is off (these devices report none); metadata in v1beta1, which this
// release insists on, then v1alpha1 for older readers.
func releaseOptions(metadata bool, cdiDir string) []kubeletplugin.Option {
	options := []kubeletplugin.Option{kubeletplugin.HealthService(false)}
	if metadata {
		versions := []schema.GroupVersion{v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion}
		options = append(options, kubeletplugin.EnableDeviceMetadata(true, versions), kubeletplugin.CDIDirectory(cdiDir))
	}
	return options
}

// releasePlugin: this release's DRAPlugin interface adds health reporting, which these devices lack.
type releasePlugin struct{}

func (releasePlugin) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
