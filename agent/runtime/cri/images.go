package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/agent/runtime"
)

// Image pull policies, as a container's imagePullPolicy names them.
const (
	PullAlways       = "Always"
	PullIfNotPresent = "IfNotPresent"
	PullNever        = "Never"
)

// Waiting reasons of a container whose image is not there.
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
)

// PullImage implements runtime.PodRuntime: Always pulls, IfNotPresent
// pulls an image the runtime does not have, Never only looks.
func (r *Runtime) PullImage(ctx context.Context, c *runtime.Container) (bool, error) {
	if c.Image == nil || c.Image.Ref == "" {
		return false, &runtime.ImagePullError{Reason: ReasonErrImagePull, Err: fmt.Errorf("container %s has no image", c.ID.Name)}
	}
	spec := &runtimeapi.ImageSpec{Image: c.Image.Ref, UserSpecifiedImage: c.Image.Ref}
	if c.Image.PullPolicy != PullAlways {
		present, err := r.HasImage(ctx, c.Image.Ref)
		if err != nil {
			return false, &runtime.ImagePullError{Reason: ReasonErrImagePull, Err: err}
		}
		if present {
			return false, nil
		}
		if c.Image.PullPolicy == PullNever {
			return false, &runtime.ImagePullError{Reason: ReasonErrImageNeverPull, Err: fmt.Errorf("container image %q is not present with pull policy of Never", c.Image.Ref)}
		}
	}
	var sbc *runtimeapi.PodSandboxConfig
	if c.Pod != nil {
		sbc = sandboxConfig(c.Pod, 0)
	}
	// Each credential in turn, as the kubelet tries them; without any,
	// none.
	auths := []*runtimeapi.AuthConfig{nil}
	if len(c.Image.Auths) > 0 {
		auths = auths[:0]
		for _, a := range c.Image.Auths {
			auths = append(auths, &runtimeapi.AuthConfig{Username: a.Username, Password: a.Password, ServerAddress: a.ServerAddress, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken})
		}
	}
	var err error
	for _, auth := range auths {
		if _, err = r.is.PullImage(ctx, spec, auth, sbc); err == nil {
			return true, nil
		}
	}
	return false, &runtime.ImagePullError{Reason: ReasonErrImagePull, Err: fmt.Errorf("failed to pull image %q: %w", c.Image.Ref, err)}
}

// HasImage says whether the runtime has the image.
func (r *Runtime) HasImage(ctx context.Context, ref string) (bool, error) {
	st, err := r.is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
	if err != nil {
		return false, fmt.Errorf("image status %q: %w", ref, err)
	}
	return st.GetImage() != nil, nil
}

// ImageInfo is one image the runtime holds.
type ImageInfo struct {
	ID     string
	Tags   []string
	Size   uint64
	Pinned bool
}

// Images lists the images the runtime holds.
func (r *Runtime) Images(ctx context.Context) ([]ImageInfo, error) {
	all, err := r.is.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("cri: list images: %w", err)
	}
	out := make([]ImageInfo, 0, len(all))
	for _, im := range all {
		out = append(out, ImageInfo{ID: im.Id, Tags: im.RepoTags, Size: im.Size, Pinned: im.Pinned})
	}
	return out, nil
}
