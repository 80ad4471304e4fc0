import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { childSummary, podSummary } from '../operator/reconcile/cache-summary.ts'
import { diffObject, FIELD_MANAGER } from '../operator/reconcile/diff.ts'
import type { JsonMap } from '../operator/reconcile/normalize.ts'
import { computeStatus, type WorkloadLike } from '../operator/reconcile/status.ts'

// What the informers cache of the operator's children and pods: only what a reconcile reads, so
// that ten thousand Memcacheds fit in one replica. Each test checks that a reconcile reading the
// cached form decides exactly as it would reading the object the API server sent.

const owner = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'cache', uid: 'uid-cache', controller: true, blockOwnerDeletion: true }

const desiredService = (annotations?: Record<string, string>): JsonMap => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'cache', namespace: 'team', labels: { 'app.kubernetes.io/instance': 'cache' }, ...(annotations ? { annotations } : {}), ownerReferences: [owner] },
  spec: { selector: { 'app.kubernetes.io/instance': 'cache' }, ports: [{ name: 'memcache', port: 11211, targetPort: 'memcache' }] },
})

// As the API server returns it after the operator applied it with annotation `a`, then a
// controller of someone else wrote a label; with a status.
const liveService = (): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: {
    name: 'cache',
    namespace: 'team',
    uid: 'uid-svc',
    resourceVersion: '17',
    labels: { 'app.kubernetes.io/instance': 'cache', team: 'x' },
    annotations: { a: '1' },
    ownerReferences: [owner],
    managedFields: [
      { manager: FIELD_MANAGER, operation: 'Apply', apiVersion: 'v1', time: '2026-11-20T10:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:annotations': { 'f:a': {} }, 'f:labels': { 'f:app.kubernetes.io/instance': {} }, 'f:ownerReferences': { 'k:{"uid":"uid-cache"}': {} } }, 'f:spec': { 'f:ports': { 'k:{"port":11211,"protocol":"TCP"}': { '.': {}, 'f:name': {}, 'f:port': {}, 'f:targetPort': {} } }, 'f:selector': {} } } },
      { manager: 'labeller', operation: 'Update', apiVersion: 'v1', time: '2026-11-20T10:00:01Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': { 'f:team': {} } } } },
      { manager: FIELD_MANAGER, operation: 'Apply', apiVersion: 'v1', time: '2026-11-20T10:00:02Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': {} }, subresource: 'status' },
    ],
  },
  spec: { type: 'ClusterIP', clusterIP: '10.0.0.7', clusterIPs: ['10.0.0.7'], selector: { 'app.kubernetes.io/instance': 'cache' }, ports: [{ name: 'memcache', port: 11211, protocol: 'TCP', targetPort: 'memcache' }], sessionAffinity: 'None' },
  status: { loadBalancer: {} },
})

t.test('a child as cached diffs as the object the server sent: unchanged is equal, an annotation no longer rendered is found', async (t) => {
  const live = liveService()
  const cached = childSummary(live)
  t.equal(diffObject(desiredService({ a: '1' }), cached).equal, true, 'nothing to apply')
  t.same(diffObject(desiredService({ a: '1' }), cached), diffObject(desiredService({ a: '1' }), live as JsonMap))
  const dropped = diffObject(desiredService(), cached)
  t.same(dropped.fields, ['.metadata.annotations.a'], 'the field applied before and no longer rendered, read from the cached managedFields')
  t.same(dropped, diffObject(desiredService(), live as JsonMap))
  t.same(diffObject(desiredService({ a: '2' }), cached).fields, ['.metadata.annotations.a'], 'a changed value')
})

t.test('a child as cached keeps of managedFields only the operator\'s own Apply entry, and no status', async (t) => {
  const cached = childSummary(liveService())
  const entries = cached.metadata.managedFields as { manager: string; operation: string; subresource?: string }[]
  t.same(entries.map((e) => [e.manager, e.operation, e.subresource]), [[FIELD_MANAGER, 'Apply', undefined]])
  t.equal(cached.status, undefined)
  t.same(cached.spec, liveService().spec, 'the spec as sent')
  t.same(cached.metadata.ownerReferences, [owner], 'the owner, for the controller index and the ownership guard')
  t.same(childSummary({ ...liveService(), metadata: { ...liveService().metadata, managedFields: undefined } }).metadata.managedFields, undefined, 'no managedFields: none invented')
})

t.test('a Deployment as cached keeps what the CR status is computed from, and gives the same status', async (t) => {
  const live: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'cache', namespace: 'team', uid: 'uid-dep', resourceVersion: '40', generation: 2, ownerReferences: [owner] },
    spec: { replicas: 3, selector: { matchLabels: { 'app.kubernetes.io/instance': 'cache' } } },
    status: {
      observedGeneration: 2,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 2,
      availableReplicas: 2,
      unavailableReplicas: 1,
      conditions: [
        { type: 'Available', status: 'False', lastUpdateTime: '2026-11-20T10:00:00Z', lastTransitionTime: '2026-11-20T10:00:00Z', reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' },
        { type: 'ReplicaFailure', status: 'True', lastUpdateTime: '2026-11-20T10:00:00Z', lastTransitionTime: '2026-11-20T10:00:00Z', reason: 'FailedCreate', message: 'pods "cache-x" is forbidden: exceeded quota' },
      ],
    },
  }
  const cached = childSummary(live)
  t.same(cached.status, {
    observedGeneration: 2,
    replicas: 3,
    updatedReplicas: 3,
    readyReplicas: 2,
    availableReplicas: 2,
    conditions: [
      { type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' },
      { type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'pods "cache-x" is forbidden: exceeded quota' },
    ],
  })
  const cr = { apiVersion: 'cache.example.com/v1alpha1' as const, kind: 'Memcached' as const, metadata: { name: 'cache', namespace: 'team', uid: 'uid-cache', generation: 1 }, spec: {} }
  const now = new Date('2026-11-20T11:00:00Z')
  const status = (dep: KubeObject, desired: KubeObject = live) => computeStatus({ cr, desiredWorkload: desired as unknown as WorkloadLike, liveWorkload: dep as unknown as WorkloadLike, pods: [], outcome: { kind: 'ok', recreated: [] }, now })
  t.same(status(cached), status(live))
  // A StatefulSet keeps the same counts: the status and a kind switch (which waits for every replica ready) read them.
  const sts = { ...live, kind: 'StatefulSet', spec: { ...(live.spec as object), serviceName: 'cache' } } as KubeObject
  t.same(childSummary(sts).status, cached.status)
  t.same(status(childSummary(sts), sts), status(sts, sts))
})

t.test('a pod as cached: its name, labels, phase, IP, readiness and deletion, what status.nodes, status.serverList and the instance index read', async (t) => {
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'cache-abc', namespace: 'team', uid: 'uid-pod', resourceVersion: '9', labels: { 'app.kubernetes.io/instance': 'cache' }, deletionTimestamp: '2026-11-20T10:00:00Z', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'cache-5d8', uid: 'uid-rs', controller: true }] },
    spec: { containers: [{ name: 'memcached', image: 'memcached:1.6.38-alpine' }] },
    status: { phase: 'Running', podIP: '10.1.0.4' },
  }
  t.same(podSummary(pod), { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'cache-abc', namespace: 'team', uid: 'uid-pod', resourceVersion: '9', labels: { 'app.kubernetes.io/instance': 'cache' }, deletionTimestamp: '2026-11-20T10:00:00Z' }, status: { phase: 'Running', podIP: '10.1.0.4' } })
})
