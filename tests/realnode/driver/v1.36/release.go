// What k8s.io/dynamic-resource-allocation v0.36.3 needs that v0.37 does not (see ../shared/driver.go).
package main

import (
	"k8s.io/dynamic-resource-allocation/api/metadata/v1alpha1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// releaseOptions: v0.36 writes metadata only in the version it is told to, v1alpha1, the only one it knows.
func releaseOptions(metadata bool, cdiDir string) []kubeletplugin.Option {
	if !metadata {
		return nil
	}
	return []kubeletplugin.Option{
		kubeletplugin.EnableDeviceMetadata(true),
		kubeletplugin.MetadataVersions(v1alpha1.SchemeGroupVersion),
		kubeletplugin.CDIDirectory(cdiDir),
	}
}

// releasePlugin: the v0.36 DRAPlugin interface needs nothing beyond prepare, unprepare and errors.
type releasePlugin struct{}
