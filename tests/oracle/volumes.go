package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// watchedFactory is an informer factory that keeps the claims' and volumes' informers
// the plugins ask for, with every event handler added to them. VolumeBinding's assume
// caches fill from their handlers alone, so a request is judged once those informers
// have run and each handler has taken their first list; the other listers are filled
// straight into their stores.
type watchedFactory struct {
	informers.SharedInformerFactory
	watched *watched
}

type watched struct {
	informers []cache.SharedIndexInformer
	handlers  []cache.ResourceEventHandlerRegistration
}

func (f watchedFactory) Core() coreinformers.Interface {
	return watchedCore{f.SharedInformerFactory.Core(), f.watched}
}

type watchedCore struct {
	coreinformers.Interface
	watched *watched
}

func (c watchedCore) V1() corev1informers.Interface {
	return watchedCoreV1{c.Interface.V1(), c.watched}
}

type watchedCoreV1 struct {
	corev1informers.Interface
	watched *watched
}

func (c watchedCoreV1) PersistentVolumes() corev1informers.PersistentVolumeInformer {
	return volumeInformer{c.Interface.PersistentVolumes(), c.watched}
}

func (c watchedCoreV1) PersistentVolumeClaims() corev1informers.PersistentVolumeClaimInformer {
	return claimInformer{c.Interface.PersistentVolumeClaims(), c.watched}
}

type volumeInformer struct {
	corev1informers.PersistentVolumeInformer
	watched *watched
}

func (i volumeInformer) Informer() cache.SharedIndexInformer {
	return i.watched.keep(i.PersistentVolumeInformer.Informer())
}

type claimInformer struct {
	corev1informers.PersistentVolumeClaimInformer
	watched *watched
}

func (i claimInformer) Informer() cache.SharedIndexInformer {
	return i.watched.keep(i.PersistentVolumeClaimInformer.Informer())
}

func (w *watched) keep(informer cache.SharedIndexInformer) cache.SharedIndexInformer {
	if !slices.Contains(w.informers, informer) {
		w.informers = append(w.informers, informer)
	}
	return recording{informer, w}
}

// recording is an informer that keeps the registration of each handler added to it.
type recording struct {
	cache.SharedIndexInformer
	watched *watched
}

func (r recording) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	reg, err := r.SharedIndexInformer.AddEventHandler(h)
	if err == nil {
		r.watched.handlers = append(r.watched.handlers, reg)
	}
	return reg, err
}

// run starts the kept informers and returns once each has listed and every handler
// added to them has taken that list (client-go's own wait polls every 100 ms, which a
// request cannot afford).
func (w *watched) run(ctx context.Context) error {
	for _, informer := range w.informers {
		go informer.Run(ctx.Done())
	}
	for _, informer := range w.informers {
		if err := until(ctx, informer.HasSynced); err != nil {
			return err
		}
	}
	for _, reg := range w.handlers {
		if err := until(ctx, reg.HasSynced); err != nil {
			return err
		}
	}
	return nil
}

func until(ctx context.Context, done func() bool) error {
	for !done() {
		if ctx.Err() != nil {
			return fmt.Errorf("volume informers: %w", ctx.Err())
		}
		time.Sleep(20 * time.Microsecond)
	}
	return nil
}
