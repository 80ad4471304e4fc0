/** Which refusals are immutable fields, which kept values are drift, and when an object may be re-created: pure, no server. */
import t from 'tap'
import { createCluster } from '../operator/sandbox/index.ts'
import { ApiError } from '../operator/controller/client.ts'
import { immutableRefusal, keptImmutable, RECREATE_ANNOTATION, whyNotRecreate } from '../operator/reconcile/recreate.ts'
import { call, deployment, type Result } from './support/sandbox-requests.ts'

const SVC = '/api/v1/namespaces/default/services'
const D = '/apis/apps/v1/namespaces/default/deployments'

/** The ApiError the operator's client makes of a sandbox answer. */
function apiError(r: Result): ApiError {
  return new ApiError(r.status, r.body.reason ?? '', r.body.message ?? '', r.body.details)
}

const service = (name: string, spec: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 11211 }], ...spec } })

t.test('a Service clusterIP → None refusal is an immutable refusal of spec.clusterIPs[0], with the server’s message', async (t) => {
  const c = createCluster()
  call(c, `POST ${SVC}`, service('mc'))
  const r = call(c, `PATCH ${SVC}/mc`, { spec: { clusterIP: 'None' } })
  t.equal(r.status, 422)
  t.same(immutableRefusal(apiError(r), 'Service'), { field: 'spec.clusterIPs[0]', message: 'Service "mc" is invalid: spec.clusterIPs[0]: Invalid value: ["None"]: may not change once set' })
})

t.test('a Deployment selector change is an immutable refusal of spec.selector', async (t) => {
  const c = createCluster()
  call(c, `POST ${D}`, deployment('web'))
  const moved = deployment('web') as unknown as { spec: { selector: unknown; template: { metadata: { labels: unknown } } } }
  moved.spec.selector = { matchLabels: { app: 'web', chart: 'renamed' } }
  moved.spec.template.metadata.labels = { app: 'web', chart: 'renamed' }
  const r = call(c, `PATCH ${D}/web?fieldManager=t&force=true`, moved, { type: 'apply' })
  t.equal(r.status, 422)
  t.match(immutableRefusal(apiError(r), 'Deployment'), { field: 'spec.selector', message: /field is immutable$/ })
})

t.test('an immutable ConfigMap refusing a data change is an immutable refusal (core/validation ValidateConfigMapUpdate)', async (t) => {
  const message = 'ConfigMap "cfg" is invalid: data: Forbidden: field is immutable when `immutable` is set'
  const err = new ApiError(422, 'Invalid', message, { causes: [{ reason: 'FieldValueForbidden', field: 'data', message: 'Forbidden: field is immutable when `immutable` is set' }] })
  t.same(immutableRefusal(err, 'ConfigMap'), { field: 'data', message })
})

t.test('a StatefulSet spec: Forbidden update is an immutable refusal of spec', async (t) => {
  const message = "StatefulSet.apps \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
  const err = new ApiError(422, 'Invalid', message, { causes: [{ reason: 'FieldValueForbidden', field: 'spec', message: message.slice(message.indexOf('Forbidden:')) }] })
  t.same(immutableRefusal(err, 'StatefulSet'), { field: 'spec', message })
})

t.test('other refusals are not immutable: another cause alongside, another kind, another status, no causes', async (t) => {
  const selector = { reason: 'FieldValueInvalid', field: 'spec.selector', message: 'Invalid value: {}: field is immutable' }
  const bad = { reason: 'FieldValueInvalid', field: 'spec.replicas', message: 'Invalid value: -1: must be greater than or equal to 0' }
  t.equal(immutableRefusal(new ApiError(422, 'Invalid', 'x', { causes: [selector, bad] }), 'Deployment'), undefined, 'a create would fail too')
  t.equal(immutableRefusal(new ApiError(422, 'Invalid', 'x', { causes: [selector] }), 'PodDisruptionBudget'), undefined, 'a PDB spec is mutable')
  t.equal(immutableRefusal(new ApiError(409, 'Conflict', 'x', { causes: [selector] }), 'Deployment'), undefined)
  t.equal(immutableRefusal(new ApiError(422, 'Invalid', 'x', {}), 'Deployment'), undefined)
  t.equal(immutableRefusal(new Error('socket hang up'), 'Deployment'), undefined)
  t.equal(immutableRefusal(undefined, 'Deployment'), undefined)
  const field = { reason: 'FieldValueInvalid', field: 'spec.ports[0].port', message: 'Invalid value: 0: may not change once set' }
  t.equal(immutableRefusal(new ApiError(422, 'Invalid', 'x', { causes: [field] }), 'Service'), undefined, 'only the known paths')
})

t.test('a live headless Service whose render asks for a cluster IP is kept immutable drift', async (t) => {
  const live = { kind: 'Service', spec: { type: 'ClusterIP', clusterIP: 'None', clusterIPs: ['None'] } }
  t.match(keptImmutable({ kind: 'Service', spec: { type: 'ClusterIP' } }, live), { field: 'spec.clusterIP', message: /headless/ })
  t.match(keptImmutable({ kind: 'Service', spec: {} }, live), { field: 'spec.clusterIP' })
  t.equal(keptImmutable({ kind: 'Service', spec: { clusterIP: 'None' } }, live), undefined, 'still headless')
  t.equal(keptImmutable({ kind: 'Service', spec: { clusterIP: '10.96.0.7' } }, live), undefined, 'an explicit address: the server refuses it itself')
  t.equal(keptImmutable({ kind: 'Service', spec: { type: 'ExternalName' } }, live), undefined, 'ExternalName drops the cluster IP')
  t.equal(keptImmutable({ kind: 'Service', spec: {} }, { kind: 'Service', spec: { clusterIP: '10.96.0.9' } }), undefined)
  t.equal(keptImmutable({ kind: 'Deployment', spec: {} }, { kind: 'Deployment', spec: { clusterIP: 'None' } }), undefined)
})

t.test('an object may be re-created only when controlled by the CR, not opted out, and not already re-created for this render', async (t) => {
  const ours = { metadata: { uid: 'obj-1', ownerReferences: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'mc', uid: 'cr-1', controller: true }] } }
  const base = { desired: { metadata: {} }, live: ours, ownerUid: 'cr-1', desiredHash: 'h2', recreatedFor: undefined }
  t.equal(whyNotRecreate(base), undefined)
  t.equal(whyNotRecreate({ ...base, recreatedFor: 'h1' }), undefined, 'a new render tries again')
  t.match(whyNotRecreate({ ...base, recreatedFor: 'h2' }), /already re-created for this render/)
  t.match(whyNotRecreate({ ...base, desired: { metadata: { annotations: { [RECREATE_ANNOTATION]: 'never' } } } }), /memcached-operator\.cache\.example\.com\/recreate is "never"/)
  t.match(whyNotRecreate({ ...base, live: { metadata: { ...ours.metadata, annotations: { [RECREATE_ANNOTATION]: 'never' } } } }), /"never"/, 'kubectl annotate on the live object')
  t.match(whyNotRecreate({ ...base, live: { metadata: { uid: 'obj-1' } } }), /does not control it/, 'an orphan')
  t.match(whyNotRecreate({ ...base, ownerUid: 'cr-2' }), /does not control it/, 'another CR’s')
  t.match(whyNotRecreate({ ...base, live: { metadata: { ownerReferences: ours.metadata.ownerReferences } } }), /does not control it/, 'no uid to make the delete conditional on')
})
