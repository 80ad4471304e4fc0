/**
 * Immutable and validated fields of the kinds charts render, as kube-apiserver 1.34 refuses them:
 * 422 Invalid with the upstream field paths, messages and value printing (apimachinery
 * field/errors.go prints non-scalar values as JSON). Each case names the upstream source.
 */
import t, { type Test } from 'tap'
import { createCluster } from '../operator/sandbox/index.ts'
import type { Cluster } from '../operator/sandbox/cluster.ts'
import { call, deployment, type Result } from './support/sandbox-requests.ts'

const SVC = '/api/v1/namespaces/default/services'
const D = '/apis/apps/v1/namespaces/default/deployments'
const RS = '/apis/apps/v1/namespaces/default/replicasets'
const STS = '/apis/apps/v1/namespaces/default/statefulsets'
const PDB = '/apis/policy/v1/namespaces/default/poddisruptionbudgets'

function service(name: string, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 11211 }], ...spec } }
}

function statefulSet(name: string, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name },
    spec: {
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'memcached:1.6' }] } },
      ...spec,
    },
  }
}

function pdb(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name }, spec }
}

function apply(c: Cluster, path: string, body: unknown): Result {
  return call(c, `${path}?fieldManager=chart&force=true`, body, { type: 'apply' })
}

function invalid(t: Tap, r: Result, message: string, causes?: { field: string; message: string }[]): void {
  t.equal(r.status, 422, JSON.stringify(r.body))
  t.equal(r.body.reason, 'Invalid')
  t.equal(r.body.message, message)
  if (causes) t.same(r.body.details.causes.map((c: { field: string; message: string }) => ({ field: c.field, message: c.message })), causes)
}

type Tap = Test

// ---------------------------------------------------------------- Service

t.test('Service clusterIP → None (headless false→true) is 422 "may not change once set" with the new clusterIPs as JSON (core/validation validateUpgradeDowngradeClusterIPs)', async (t) => {
  const c = createCluster()
  t.equal(apply(c, `PATCH ${SVC}/mc`, service('mc')).status, 201)
  const r = apply(c, `PATCH ${SVC}/mc`, service('mc', { clusterIP: 'None' }))
  invalid(t, r, 'Service "mc" is invalid: spec.clusterIPs[0]: Invalid value: ["None"]: may not change once set', [{ field: 'spec.clusterIPs[0]', message: 'Invalid value: ["None"]: may not change once set' }])
  t.same(r.body.details, { name: 'mc', kind: 'Service', causes: r.body.details.causes })
})

t.test('Service None → IP is 422 when the address is given; leaving clusterIP out keeps None (storage.go patchAllocatedValues)', async (t) => {
  const c = createCluster()
  t.equal(apply(c, `PATCH ${SVC}/h`, service('h', { clusterIP: 'None' })).status, 201)
  invalid(t, call(c, `PATCH ${SVC}/h`, { spec: { clusterIP: '10.96.7.7' } }), 'Service "h" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.7.7"]: may not change once set')
  const kept = apply(c, `PATCH ${SVC}/h`, service('h'))
  t.equal(kept.status, 200)
  t.equal(kept.body.spec.clusterIP, 'None')
  t.same(kept.body.spec.clusterIPs, ['None'])
})

t.test('Service IP → another IP is 422; a PUT without clusterIP keeps the allocated one', async (t) => {
  const c = createCluster()
  const created = call(c, `POST ${SVC}`, service('s'))
  const ip = created.body.spec.clusterIP
  invalid(t, call(c, `PATCH ${SVC}/s`, { spec: { clusterIP: '10.96.9.9' } }), 'Service "s" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.9.9"]: may not change once set')
  const put = call(c, `PUT ${SVC}/s`, service('s', { ports: [{ port: 1 }] }))
  t.equal(put.status, 200)
  t.equal(put.body.spec.clusterIP, ip)
  t.same(put.body.spec.clusterIPs, [ip])
})

t.test('Service clusterIP and clusterIPs that disagree are refused by the allocator alone (alloc.go initIPFamilyFields, ValidateServiceClusterIPsRelatedFields)', async (t) => {
  const c = createCluster()
  call(c, `POST ${SVC}`, service('s'))
  const r = call(c, `PATCH ${SVC}/s`, { spec: { clusterIP: '10.96.1.1', clusterIPs: ['10.96.2.2'] } })
  invalid(t, r, 'Service "s" is invalid: spec.clusterIPs: Invalid value: ["10.96.2.2"]: first value must match `clusterIP`')
  invalid(t, call(c, `PATCH ${SVC}/s`, { spec: { clusterIP: '10.96.1.1', clusterIPs: ['10.96.1.1'] } }), 'Service "s" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.1.1"]: may not change once set')
})

t.test('changing a Service to ExternalName clears clusterIP, clusterIPs, ipFamilies and ipFamilyPolicy (strategy.go dropTypeDependentFields)', async (t) => {
  const c = createCluster()
  call(c, `POST ${SVC}`, service('x'))
  const r = apply(c, `PATCH ${SVC}/x`, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' }, spec: { type: 'ExternalName', externalName: 'memcached.example.com' } })
  t.equal(r.status, 200, JSON.stringify(r.body))
  for (const f of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy']) t.equal(r.body.spec[f], undefined, f)
  const back = call(c, `PATCH ${SVC}/x`, { spec: { type: 'ClusterIP', externalName: null } })
  t.equal(back.status, 200, JSON.stringify(back.body))
  t.match(back.body.spec.clusterIP, /^10\.96\./)
})

t.test('an ExternalName Service may not set clusterIPs, ipFamilies or ipFamilyPolicy and needs externalName (ValidateService)', async (t) => {
  const c = createCluster()
  const r = call(c, `POST ${SVC}`, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'e' }, spec: { type: 'ExternalName', clusterIPs: ['10.96.3.3'], ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack' } })
  invalid(t, r, 'Service "e" is invalid: [spec.clusterIPs: Forbidden: may not be set for ExternalName services, spec.ipFamilies: Forbidden: may not be set for ExternalName services, spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services, spec.externalName: Required value]')
})

t.test('Service ipFamilies may not change once set; this single-stack cluster refuses IPv6 and RequireDualStack (validateUpgradeDowngradeIPFamilies, alloc.go)', async (t) => {
  const c = createCluster()
  call(c, `POST ${SVC}`, service('f'))
  // The allocator's loose pre-validation answers first, with its errors alone.
  invalid(t, call(c, `PATCH ${SVC}/f`, { spec: { ipFamilies: ['IPv6'] } }), 'Service "f" is invalid: spec.clusterIPs[0]: Invalid value: "10.96.0.10": expected an IPv6 value as indicated by `ipFamilies[0]`')
  t.equal(call(c, `POST ${SVC}`, service('h', { clusterIP: 'None' })).status, 201)
  t.equal(call(c, `PATCH ${SVC}/h`, { spec: { ipFamilies: ['IPv4', 'IPv6'] } }).status, 422, 'a headless Service may change families, but not to one this cluster lacks')
  invalid(t, call(c, `POST ${SVC}`, service('g', { ipFamilies: ['IPv6'] })), 'Service "g" is invalid: spec.ipFamilies[0]: Invalid value: ["IPv6"]: IPv6 is not configured on this cluster')
  invalid(t, call(c, `POST ${SVC}`, service('g', { ipFamilyPolicy: 'RequireDualStack' })), 'Service "g" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services')
  invalid(t, call(c, `POST ${SVC}`, service('g', { ipFamilyPolicy: 'Sometimes' })), 'Service "g" is invalid: spec.ipFamilyPolicy: Unsupported value: "Sometimes": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"')
  t.equal(call(c, `POST ${SVC}`, service('g', { ipFamilyPolicy: 'PreferDualStack' })).status, 201)
})

t.test('a headless NodePort Service and a bad clusterIP are refused (ValidateService, ValidateServiceClusterIPsRelatedFields)', async (t) => {
  const c = createCluster()
  invalid(t, call(c, `POST ${SVC}`, service('n', { type: 'NodePort', clusterIP: 'None' })), 'Service "n" is invalid: spec.clusterIPs[0]: Invalid value: "None": may not be set to \'None\' for NodePort services')
  invalid(t, call(c, `POST ${SVC}`, service('n', { clusterIP: '10.96.300.1' })), 'Service "n" is invalid: spec.clusterIPs[0]: Invalid value: "10.96.300.1": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')
  invalid(t, call(c, `POST ${SVC}`, service('n', { ports: [{ port: 80, name: 'a' }, { port: 80, name: 'b' }] })), 'Service "n" is invalid: spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}')
})

// ---------------------------------------------------------------- Deployment, ReplicaSet

t.test('apps/v1 Deployment and ReplicaSet selectors are immutable; the value prints as JSON (registry/apps/*/strategy.go ValidateUpdate)', async (t) => {
  const c = createCluster()
  t.equal(call(c, `POST ${D}`, deployment('web')).status, 201)
  const d = deployment('web')
  ;(d.spec as { selector: unknown; template: { metadata: { labels: Record<string, string> } } }).selector = { matchLabels: { app: 'web', chart: 'other' } }
  ;(d.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels = { app: 'web', chart: 'other' }
  invalid(t, apply(c, `PATCH ${D}/web`, d), 'Deployment.apps "web" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"web","chart":"other"}}: field is immutable')
  const rs = { ...deployment('r'), kind: 'ReplicaSet' }
  t.equal(call(c, `POST ${RS}`, rs).status, 201)
  const r = call(c, `PATCH ${RS}/r`, { spec: { selector: { matchLabels: { app: 'r' }, matchExpressions: [{ key: 'app', operator: 'Exists' }] } } })
  invalid(t, r, 'ReplicaSet.apps "r" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"r"},"matchExpressions":[{"key":"app","operator":"Exists"}]}: field is immutable')
})

t.test('Deployment spec rules: rolling update bounds, selector requirements (apps/validation ValidateDeploymentSpec, meta/v1 ValidateLabelSelector)', async (t) => {
  const c = createCluster()
  const d = (spec: Record<string, unknown>) => ({ ...deployment('d'), spec: { ...(deployment('d').spec as object), ...spec } })
  invalid(t, call(c, `POST ${D}`, d({ strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 0 } } })), 'Deployment.apps "d" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0')
  invalid(t, call(c, `POST ${D}`, d({ strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '150%' } } })), 'Deployment.apps "d" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%')
  invalid(t, call(c, `POST ${D}`, d({ selector: { matchLabels: { app: 'd' }, matchExpressions: [{ key: 'app', operator: 'In' }] } })), 'Deployment.apps "d" is invalid: [spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is \'In\' or \'NotIn\', spec.template.metadata.labels: Invalid value: {"app":"d"}: `selector` does not match template `labels`]')
})

// ---------------------------------------------------------------- StatefulSet

t.test('StatefulSets are served with their defaults, status, and scale subresource', async (t) => {
  const c = createCluster()
  const r = call(c, `POST ${STS}`, statefulSet('db', { volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }] }))
  t.equal(r.status, 201, JSON.stringify(r.body))
  t.match(r.body.spec, { replicas: 1, podManagementPolicy: 'OrderedReady', updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } }, revisionHistoryLimit: 10, persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' } })
  t.match(r.body.spec.volumeClaimTemplates[0], { apiVersion: 'v1', kind: 'PersistentVolumeClaim', spec: { volumeMode: 'Filesystem' }, status: { phase: 'Pending' } })
  t.same(r.body.status, { replicas: 0, availableReplicas: 0 })
  t.equal(r.body.metadata.generation, 1)
  t.equal(call(c, `PATCH ${STS}/db/scale`, { spec: { replicas: 3 } }).status, 200)
  t.match(call(c, `GET ${STS}/db/scale`).body, { kind: 'Scale', spec: { replicas: 3 }, status: { selector: 'app=db' } })
  t.equal(call(c, `PATCH ${STS}/db/status`, { status: { replicas: 3, readyReplicas: 3 } }).body.status.readyReplicas, 3)
    t.ok(c.registry.lookup('apps', 'v1', 'statefulsets')?.subresources.scale, 'served with a scale subresource')
})

t.test('StatefulSet updates to serviceName, volumeClaimTemplates, podManagementPolicy or selector are one "spec: Forbidden" (apps/validation ValidateStatefulSetUpdate)', async (t) => {
  const c = createCluster()
  t.equal(apply(c, `PATCH ${STS}/db`, statefulSet('db')).status, 201)
  const message = "StatefulSet.apps \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
  invalid(t, call(c, `PATCH ${STS}/db`, { spec: { serviceName: 'other' } }), message)
  invalid(t, call(c, `PATCH ${STS}/db`, { spec: { podManagementPolicy: 'Parallel' } }), message)
  invalid(t, call(c, `PATCH ${STS}/db`, { spec: { volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'] } }] } }), message)
  const moved = statefulSet('db', { selector: { matchLabels: { app: 'db', v: '2' } } })
  ;(moved.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels = { app: 'db', v: '2' }
  invalid(t, apply(c, `PATCH ${STS}/db`, moved), message)
  const ok = call(c, `PATCH ${STS}/db`, { spec: { replicas: 2, minReadySeconds: 5, updateStrategy: { type: 'OnDelete', rollingUpdate: null }, template: { spec: { containers: [{ name: 'app', image: 'memcached:1.7' }] } } } })
  t.equal(ok.status, 200, JSON.stringify(ok.body))
  t.equal(ok.body.metadata.generation, 2)
})

t.test('StatefulSet spec validation and name rules (ValidateStatefulSetSpec, ValidateStatefulSetName)', async (t) => {
  const c = createCluster()
  invalid(t, call(c, `POST ${STS}`, statefulSet('db', { podManagementPolicy: 'Sometimes' })), 'StatefulSet.apps "db" is invalid: spec.podManagementPolicy: Invalid value: "Sometimes": must be \'OrderedReady\' or \'Parallel\'')
  invalid(t, call(c, `POST ${STS}`, statefulSet('db', { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: -1 } } })), 'StatefulSet.apps "db" is invalid: spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0')
  invalid(t, call(c, `POST ${STS}`, statefulSet('db', { persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Keep' } })), 'StatefulSet.apps "db" is invalid: spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": supported values: "Retain", "Delete"')
  invalid(t, call(c, `POST ${STS}`, statefulSet('db', { selector: {} })), 'StatefulSet.apps "db" is invalid: spec.selector: Invalid value: {}: empty selector is invalid for statefulset')
  // IsDNS1123Label (apimachinery 1.34) says so when the name is a valid subdomain.
  invalid(t, call(c, `POST ${STS}`, statefulSet('a.b')), 'StatefulSet.apps "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots')
  invalid(t, call(c, `POST ${STS}`, statefulSet('A_b')), 'StatefulSet.apps "A_b" is invalid: metadata.name: Invalid value: "A_b": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\', and must start and end with an alphanumeric character (e.g. \'my-name\',  or \'123-abc\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?\')')
})

// ---------------------------------------------------------------- PodDisruptionBudget

t.test('PodDisruptionBudget: minAvailable with maxUnavailable prints the internal spec; percentages, negatives and selectors are checked (policy/validation ValidatePodDisruptionBudgetSpec)', async (t) => {
  const c = createCluster()
  invalid(t, call(c, `POST ${PDB}`, pdb('p', { minAvailable: 1, maxUnavailable: '10%', selector: { matchLabels: { app: 'mc' } } })), 'PodDisruptionBudget.policy "p" is invalid: spec: Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"app":"mc"}},"MaxUnavailable":"10%","UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set')
  invalid(t, call(c, `POST ${PDB}`, pdb('p', { minAvailable: -1 })), 'PodDisruptionBudget.policy "p" is invalid: spec.minAvailable: Invalid value: -1: must be greater than or equal to 0')
  invalid(t, call(c, `POST ${PDB}`, pdb('p', { maxUnavailable: '120%' })), 'PodDisruptionBudget.policy "p" is invalid: spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%')
  invalid(t, call(c, `POST ${PDB}`, pdb('p', { minAvailable: 'half' })), 'PodDisruptionBudget.policy "p" is invalid: spec.minAvailable: Invalid value: "half": a valid percent string must be a numeric string followed by an ending \'%\' (e.g. \'1%\',  or \'93%\', regex used for validation is \'[0-9]+%\')')
  invalid(t, call(c, `POST ${PDB}`, pdb('p', { minAvailable: 1, selector: { matchExpressions: [{ key: 'app', operator: 'Near', values: ['x'] }] } })), 'PodDisruptionBudget.policy "p" is invalid: spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator')
  invalid(t, call(c, `POST ${PDB}`, pdb('p', { minAvailable: 1, unhealthyPodEvictionPolicy: 'Never' })), 'PodDisruptionBudget.policy "p" is invalid: spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"')
  t.equal(call(c, `POST ${PDB}`, pdb('p', { minAvailable: '50%', selector: { matchLabels: { app: 'mc' } } })).status, 201)
  t.equal(call(c, `PATCH ${PDB}/p`, { spec: { minAvailable: 2 } }).status, 200, 'a PDB spec is mutable in policy/v1')
})

t.test('several failed fields: one message in validator order, identical messages printed once, every cause kept (field.ErrorList.ToAggregate)', async (t) => {
  const c = createCluster()
  const body = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port: 0, name: 'a' }, { port: 0, name: 'a' }] } }
  const r = call(c, `POST ${SVC}`, body)
  invalid(t, r, 'Service "s" is invalid: [spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[1].name: Duplicate value: "a", spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":0,"TargetPort":0,"NodePort":0}]')
  const d = deployment('dup')
  ;(d.metadata as { labels: Record<string, string> }).labels = { a: '-x', b: '-x' }
  const dup = call(c, `POST ${D}`, d)
  t.equal(dup.body.details.causes.length, 2, 'both causes are listed')
  t.equal(dup.body.message.match(/metadata\.labels: Invalid value: "-x"/g)?.length, 1, 'the identical message is printed once')
})

// ---------------------------------------------------------------- ConfigMap, Secret

t.test('an immutable ConfigMap keeps its data and its mark; its metadata still changes (core/validation ValidateConfigMapUpdate)', async (t) => {
  const c = createCluster()
  const CM = '/api/v1/namespaces/default/configmaps'
  t.equal(call(c, `POST ${CM}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' }, immutable: true }).status, 201)
  invalid(t, call(c, `PATCH ${CM}/c`, { data: { a: '2' } }), 'ConfigMap "c" is invalid: data: Forbidden: field is immutable when `immutable` is set', [{ field: 'data', message: 'Forbidden: field is immutable when `immutable` is set' }])
  invalid(t, apply(c, `PATCH ${CM}/c`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, binaryData: { b: 'AA==' } }), 'ConfigMap "c" is invalid: binaryData: Forbidden: field is immutable when `immutable` is set', [{ field: 'binaryData', message: 'Forbidden: field is immutable when `immutable` is set' }])
  invalid(t, call(c, `PUT ${CM}/c`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, binaryData: { b: 'AA==' } }), 'ConfigMap "c" is invalid: [immutable: Forbidden: field is immutable when `immutable` is set, data: Forbidden: field is immutable when `immutable` is set, binaryData: Forbidden: field is immutable when `immutable` is set]')
  invalid(t, call(c, `PATCH ${CM}/c`, { immutable: false }), 'ConfigMap "c" is invalid: immutable: Forbidden: field is immutable when `immutable` is set')
  t.equal(call(c, `PATCH ${CM}/c`, { metadata: { labels: { tier: 'cache' } } }).status, 200, 'labels change')
  t.equal(call(c, `PATCH ${CM}/c`, { data: { a: '1' } }).status, 200, 'the same data is no change')
  t.equal(call(c, `DELETE ${CM}/c`).status, 200, 'and it can be deleted, the way to change it')
  t.equal(call(c, `POST ${CM}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'm' }, data: { a: '1' } }).status, 201)
  t.equal(call(c, `PATCH ${CM}/m`, { data: { a: '2' }, immutable: true }).status, 200, 'a mutable ConfigMap may change and become immutable in one update')
})

t.test('a Secret\'s type never changes; an immutable Secret keeps its data, stringData included (core/validation ValidateSecretUpdate)', async (t) => {
  const c = createCluster()
  const S = '/api/v1/namespaces/default/secrets'
  t.equal(call(c, `POST ${S}`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { a: 'MQ==' } }).status, 201)
  invalid(t, call(c, `PATCH ${S}/s`, { type: 'example.com/other' }), 'Secret "s" is invalid: type: Invalid value: "example.com/other": field is immutable', [{ field: 'type', message: 'Invalid value: "example.com/other": field is immutable' }])
  t.equal(call(c, `PATCH ${S}/s`, { immutable: true }).status, 200)
  invalid(t, call(c, `PATCH ${S}/s`, { stringData: { a: '2' } }), 'Secret "s" is invalid: data: Forbidden: field is immutable when `immutable` is set')
  invalid(t, call(c, `PATCH ${S}/s`, { immutable: null }), 'Secret "s" is invalid: immutable: Forbidden: field is immutable when `immutable` is set')
  t.equal(call(c, `PATCH ${S}/s`, { stringData: { a: '1' } }).status, 200, 'stringData equal to the data is no change')
})
