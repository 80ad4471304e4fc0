import t from 'tap'
import { diffObject, FIELD_MANAGER, ownedNotDesired, readablePath } from '../operator/reconcile/diff.ts'
import { isAtomicMap, keySegment, listMapKeys, normalize, projectOnto, type JsonMap } from '../operator/reconcile/normalize.ts'

// A Deployment as a chart renders it: quantities in the author's spelling, no protocol on the port.
const desiredDeployment = (): JsonMap => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'cache',
    namespace: 'team',
    labels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' },
    ownerReferences: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'cache', uid: 'uid-cache', controller: true, blockOwnerDeletion: true }],
  },
  spec: {
    replicas: 3,
    selector: { matchLabels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } },
    template: {
      metadata: { labels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } },
      spec: {
        containers: [
          {
            name: 'memcached',
            image: 'memcached:1.6.38-alpine',
            args: ['-p', '11211', '-m', '64'],
            ports: [{ name: 'memcache', containerPort: 11211 }],
            env: [{ name: 'A', value: '1' }],
            readinessProbe: { tcpSocket: { port: 'memcache' }, periodSeconds: 5 },
            resources: { requests: { cpu: '0.5', memory: '1024Mi' }, limits: { cpu: 1, memory: '1.5Gi' } },
          },
        ],
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'cache', effect: 'NoSchedule' }],
        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { 'app.kubernetes.io/instance': 'cache' } } }],
      },
    },
  },
})

// The same object as kube-apiserver returns it (reference §3): identity and bookkeeping metadata,
// defaults everywhere, canonical quantities, the protocol key filled in, and a status.
const liveDeployment = (): JsonMap => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'cache',
    namespace: 'team',
    uid: '5c4b0d38-0f5e-4a43-9b1c-3c1e6f7f2a10',
    resourceVersion: '48213',
    generation: 4,
    creationTimestamp: '2026-11-20T10:00:00Z',
    annotations: { 'deployment.kubernetes.io/revision': '4' },
    labels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' },
    ownerReferences: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'cache', uid: 'uid-cache', controller: true, blockOwnerDeletion: true }],
    managedFields: [
      { manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'apps/v1', time: '2026-11-20T10:00:05Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {}, 'f:deployment.kubernetes.io/revision': {} } } } },
      { manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'apps/v1', time: '2026-11-20T10:00:05Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': { 'f:replicas': {} } }, subresource: 'status' },
    ],
  },
  spec: {
    replicas: 3,
    selector: { matchLabels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } },
    template: {
      metadata: { labels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' } },
      spec: {
        containers: [
          {
            name: 'memcached',
            image: 'memcached:1.6.38-alpine',
            args: ['-p', '11211', '-m', '64'],
            ports: [{ name: 'memcache', containerPort: 11211, protocol: 'TCP' }],
            env: [{ name: 'A', value: '1' }],
            readinessProbe: { tcpSocket: { port: 'memcache' }, periodSeconds: 5, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 },
            resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', memory: '1536Mi' } },
            imagePullPolicy: 'IfNotPresent',
            terminationMessagePath: '/dev/termination-log',
            terminationMessagePolicy: 'File',
          },
        ],
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'cache', effect: 'NoSchedule' }],
        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { 'app.kubernetes.io/instance': 'cache' } } }],
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 30,
        dnsPolicy: 'ClusterFirst',
        securityContext: {},
        schedulerName: 'default-scheduler',
      },
    },
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } },
    revisionHistoryLimit: 10,
    progressDeadlineSeconds: 600,
  },
  status: {
    observedGeneration: 4,
    replicas: 3,
    updatedReplicas: 3,
    readyReplicas: 3,
    availableReplicas: 3,
    conditions: [{ type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' }],
  },
})

const desiredService = (): JsonMap => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'cache', namespace: 'team' },
  spec: { type: 'ClusterIP', clusterIP: 'None', selector: { app: 'cache' }, ports: [{ name: 'memcache', port: 11211, targetPort: 'memcache' }] },
})

const liveService = (): JsonMap => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'cache', namespace: 'team', uid: 'svc-uid', resourceVersion: '10', creationTimestamp: '2026-11-20T10:00:00Z' },
  spec: {
    type: 'ClusterIP',
    clusterIP: 'None',
    clusterIPs: ['None'],
    selector: { app: 'cache' },
    ports: [{ name: 'memcache', port: 11211, targetPort: 'memcache', protocol: 'TCP' }],
    sessionAffinity: 'None',
    ipFamilies: ['IPv4'],
    ipFamilyPolicy: 'SingleStack',
    internalTrafficPolicy: 'Cluster',
  },
  status: { loadBalancer: {} },
})

type Obj = Record<string, any>
const container = (o: Obj): Obj => o.spec.template.spec.containers[0]
const C = '.spec.template.spec.containers[name="memcached"]'

interface Case {
  name: string
  desired?: (d: Obj) => void
  live?: (l: Obj) => void
  /** Changed fields; empty: equal. */
  fields: string[]
}

t.test('deployment: what the server adds or re-spells is no difference; what we render and drifted is', async (t) => {
  const cases: Case[] = [
    { name: 'the live object exactly as the server returns it', fields: [] },
    { name: 'a foreign annotation and label added by another manager', live: (l) => Object.assign(l.metadata, { annotations: { ...l.metadata.annotations, 'example.com/note': 'x' }, labels: { ...l.metadata.labels, team: 'a' } }), fields: [] },
    { name: 'a foreign pod-template annotation (kubectl rollout restart)', live: (l) => (l.spec.template.metadata.annotations = { 'kubectl.kubernetes.io/restartedAt': '2026-11-21T10:00:00Z' }), fields: [] },
    { name: 'a sidecar container injected by another manager', live: (l) => l.spec.template.spec.containers.push({ name: 'proxy', image: 'envoy' }), fields: [] },
    { name: 'an env var added by another manager', live: (l) => container(l).env.push({ name: 'B', value: '2' }), fields: [] },
    { name: 'a container port added by another manager', live: (l) => container(l).ports.push({ containerPort: 9150, protocol: 'TCP' }), fields: [] },
    { name: 'list-map items in another order', live: (l) => l.spec.template.spec.containers.unshift({ name: 'first', image: 'x' }), fields: [] },
    { name: 'desired sets fields to their server defaults', desired: (d) => Object.assign(container(d), { imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' }) && (container(d).ports[0].protocol = 'TCP') && (d.spec.strategy = { type: 'RollingUpdate' }), fields: [] },
    { name: 'quantities in every spelling', desired: (d) => (container(d).resources = { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1000m', memory: '1536Mi' } }), fields: [] },
    { name: 'a list item without apiVersion and kind', live: (l) => (delete l.apiVersion, delete l.kind), fields: [] },
    { name: 'empty maps, empty lists and nulls the server omits', desired: (d) => Object.assign(d.metadata, { annotations: {} }) && Object.assign(container(d), { command: [], envFrom: null }), fields: [] },
    { name: 'a desired empty struct the server keeps and another manager filled', desired: (d) => (d.spec.template.spec.securityContext = {}), live: (l) => (l.spec.template.spec.securityContext = { fsGroup: 2000 }), fields: [] },
    { name: 'replicas edited by another manager', live: (l) => (l.spec.replicas = 5), fields: ['.spec.replicas'] },
    { name: 'image edited by another manager', live: (l) => (container(l).image = 'memcached:latest'), fields: [`${C}.image`] },
    { name: 'a new image rendered', desired: (d) => (container(d).image = 'memcached:1.6.39-alpine'), fields: [`${C}.image`] },
    { name: 'an argument added by another manager (args are atomic)', live: (l) => container(l).args.push('-v'), fields: [`${C}.args[4]`] },
    { name: 'an argument changed', desired: (d) => (container(d).args[3] = '128'), fields: [`${C}.args[3]`] },
    { name: 'a resource value changed', live: (l) => (container(l).resources.requests.cpu = '250m'), fields: [`${C}.resources.requests.cpu`] },
    { name: 'a resource removed by another manager', live: (l) => delete container(l).resources.limits.cpu, fields: [`${C}.resources.limits.cpu`] },
    { name: 'a toleration added by another manager (tolerations are atomic)', live: (l) => l.spec.template.spec.tolerations.push({ key: 'x', operator: 'Exists' }), fields: ['.spec.template.spec.tolerations[1]'] },
    { name: 'a key added to the atomic label selector of a spread constraint', live: (l) => (l.spec.template.spec.topologySpreadConstraints[0].labelSelector.matchLabels.extra = 'y'), fields: ['.spec.template.spec.topologySpreadConstraints[topologyKey="topology.kubernetes.io/zone",whenUnsatisfiable="ScheduleAnyway"].labelSelector.matchLabels.extra'] },
    { name: 'our env var changed', live: (l) => (container(l).env[0].value = '2'), fields: [`${C}.env[name="A"].value`] },
    { name: 'our env var removed by another manager', live: (l) => (container(l).env = []), fields: [`${C}.env`] },
    { name: 'our port now UDP live: the TCP port is missing', live: (l) => (container(l).ports[0].protocol = 'UDP'), fields: [`${C}.ports`] },
    { name: 'our container removed', live: (l) => (l.spec.template.spec.containers = [{ name: 'other', image: 'x' }]), fields: ['.spec.template.spec.containers'] },
    { name: 'a label of ours changed', live: (l) => (l.metadata.labels['app.kubernetes.io/instance'] = 'other'), fields: ['.metadata.labels.app.kubernetes.io/instance'] },
    { name: 'our controller reference removed', live: (l) => delete l.metadata.ownerReferences, fields: ['.metadata.ownerReferences'] },
    { name: 'a probe setting changed', desired: (d) => (container(d).readinessProbe.periodSeconds = 10), fields: [`${C}.readinessProbe.periodSeconds`] },
  ]
  for (const c of cases) {
    const desired = desiredDeployment()
    const live = liveDeployment()
    c.desired?.(desired)
    c.live?.(live)
    const before = structuredClone([desired, live])
    const d = diffObject(desired, live)
    t.same(d.fields, c.fields, c.name)
    t.equal(d.equal, c.fields.length === 0, `${c.name}: equal`)
    t.equal(d.patch.length, d.fields.length, `${c.name}: one field per operation`)
    t.same([desired, live], before, `${c.name}: inputs unchanged`)
  }
})

t.test('the patch says what applying would do, with list-map items addressed by key', async (t) => {
  const live = liveDeployment()
  container(live).image = 'memcached:latest'
  container(live).resources.requests.cpu = '250m'
  live.spec = { ...(live.spec as Obj), replicas: 1 }
  t.same(diffObject(desiredDeployment(), live).patch, [
    { op: 'replace', path: '/spec/template/spec/containers/[name="memcached"]/resources/requests/cpu', value: '500m' },
    { op: 'replace', path: '/spec/template/spec/containers/[name="memcached"]/image', value: 'memcached:1.6.38-alpine' },
    { op: 'replace', path: '/spec/replicas', value: 3 },
  ])
})

t.test('a missing live object differs from everything', async (t) => {
  const d = diffObject(desiredService(), undefined)
  t.equal(d.equal, false)
  t.same(d.fields, ['.'])
  t.equal(d.patch[0]?.op, 'add')
})

t.test('service: defaults and allocations are no difference; int-or-string keeps its type; the selector is atomic', async (t) => {
  const cases: Case[] = [
    { name: 'as the server returns it', fields: [] },
    { name: 'protocol explicitly TCP in desired', desired: (d) => (d.spec.ports[0].protocol = 'TCP'), fields: [] },
    { name: 'targetPort number vs string is a difference', desired: (d) => (d.spec.ports[0].targetPort = 11211), fields: ['.spec.ports[port=11211,protocol="TCP"].targetPort'] },
    { name: 'targetPort "11211" vs 11211', desired: (d) => (d.spec.ports[0].targetPort = '11211'), live: (l) => (l.spec.ports[0].targetPort = 11211), fields: ['.spec.ports[port=11211,protocol="TCP"].targetPort'] },
    { name: 'a key added to the atomic selector', live: (l) => (l.spec.selector.extra = 'x'), fields: ['.spec.selector.extra'] },
    { name: 'a port added by another manager', live: (l) => l.spec.ports.push({ name: 'metrics', port: 9150, targetPort: 9150, protocol: 'TCP' }), fields: [] },
    { name: 'the port moved to another number', live: (l) => (l.spec.ports[0].port = 11311), fields: ['.spec.ports'] },
  ]
  for (const c of cases) {
    const desired = desiredService()
    const live = liveService()
    c.desired?.(desired)
    c.live?.(live)
    t.same(diffObject(desired, live).fields, c.fields, c.name)
  }
})

const applyEntry = (fieldsV1: JsonMap, extra: JsonMap = {}): JsonMap => ({ manager: FIELD_MANAGER, operation: 'Apply', apiVersion: 'apps/v1', time: '2026-11-20T10:00:00Z', fieldsType: 'FieldsV1', fieldsV1, ...extra })
const withManaged = (live: JsonMap, ...entries: JsonMap[]): JsonMap => {
  const meta = live.metadata as Obj
  meta.managedFields = [...(meta.managedFields ?? []), ...entries]
  return live
}

t.test('fields we applied before and no longer render are differences (the apply would remove them)', async (t) => {
  const owned = {
    'f:metadata': { 'f:annotations': { 'f:old': {} }, 'f:labels': { 'f:app.kubernetes.io/name': {} }, 'f:ownerReferences': { 'k:{"uid":"uid-cache"}': {} } },
    'f:spec': {
      'f:replicas': {},
      'f:minReadySeconds': {},
      'f:template': {
        'f:spec': {
          'f:containers': {
            'k:{"name":"memcached"}': {
              '.': {},
              'f:image': {},
              'f:args': {},
              'f:env': { 'k:{"name":"A"}': { '.': {}, 'f:name': {}, 'f:value': {} }, 'k:{"name":"OLD"}': { '.': {}, 'f:name': {} } },
              'f:ports': { 'k:{"containerPort":11211,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:name': {} }, 'k:{"containerPort":9150,"protocol":"TCP"}': { '.': {} } },
            },
            'k:{"name":"exporter"}': { '.': {}, 'f:image': {} },
          },
        },
      },
    },
  }
  const live = withManaged(liveDeployment(), applyEntry(owned))
  const d = diffObject(desiredDeployment(), live)
  t.same(d.fields, [
    '.metadata.annotations.old',
    '.spec.minReadySeconds',
    `${C}.env[name="OLD"]`,
    `${C}.ports[containerPort=9150,protocol="TCP"]`,
    '.spec.template.spec.containers[name="exporter"]',
  ])
  t.ok(d.patch.every((op) => op.op === 'remove'))
  t.equal(d.equal, false)
})

t.test('only our own Apply entry on the main resource counts', async (t) => {
  const owned = { 'f:metadata': { 'f:annotations': { 'f:old': {} } } }
  const cases: [string, JsonMap, boolean][] = [
    ['our Apply entry', applyEntry(owned), false],
    ['our Update entry (a client-side write)', applyEntry(owned, { operation: 'Update' }), true],
    ['our Apply entry of the status subresource', applyEntry(owned, { subresource: 'status' }), true],
    ['an empty subresource is the main resource', applyEntry(owned, { subresource: '' }), false],
    ["another manager's Apply entry", applyEntry(owned, { manager: 'helm' }), true],
    ['an entry without fieldsV1', { manager: FIELD_MANAGER, operation: 'Apply' }, true],
  ]
  for (const [name, entry, equal] of cases) t.equal(diffObject(desiredDeployment(), withManaged(liveDeployment(), entry)).equal, equal, name)
  t.equal(diffObject(desiredDeployment(), withManaged(liveDeployment(), applyEntry(owned, { manager: 'helm' })), { manager: 'helm' }).equal, false, 'the manager is an option')
})

t.test('owned fields still rendered are no difference, whatever their values', async (t) => {
  const owned = {
    'f:metadata': { 'f:labels': { 'f:app.kubernetes.io/name': {} } },
    'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"memcached"}': { 'f:ports': { 'k:{"containerPort":11211,"protocol":"TCP"}': { 'f:protocol': {} } }, 'f:args': { 'i:0': {} } } } } } },
  }
  t.same(ownedNotDesired(desiredDeployment(), withManaged(liveDeployment(), applyEntry(owned)), FIELD_MANAGER), [[
    'spec', 'template', 'spec', 'containers', '[name="memcached"]', 'ports', '[containerPort=11211,protocol="TCP"]', 'protocol',
  ]], 'a key field we applied and no longer write is reported once (the apply re-assigns ownership)')
  const notMine = { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"memcached"}': { 'f:ports': { 'k:{"containerPort":11211,"protocol":"TCP"}': { 'f:name': {} } } } } } } } }
  t.same(ownedNotDesired(desiredDeployment(), withManaged(liveDeployment(), applyEntry(notMine)), FIELD_MANAGER), [], 'the port matches with the default protocol')
})

t.test('finalizers are a set: compared by value, in any order, foreign ones ignored', async (t) => {
  const desired: JsonMap = { metadata: { name: 'x', finalizers: ['a', 'b'] } }
  t.equal(diffObject(desired, { metadata: { name: 'x', finalizers: ['c', 'b', 'a'] } }).equal, true)
  t.same(diffObject(desired, { metadata: { name: 'x', finalizers: ['c', 'a'] } }).fields, ['.metadata.finalizers[1]'])
})

t.test('set items we applied and no longer render are differences; malformed keys are ignored', async (t) => {
  const desired: JsonMap = { metadata: { name: 'x', finalizers: ['a'] } }
  const live: JsonMap = { metadata: { name: 'x', finalizers: ['a', 'b'], managedFields: [applyEntry({ 'f:metadata': { 'f:finalizers': { 'v:"a"': {}, 'v:"b"': {} } }, 'f:spec': { 'k:not-json': {}, 'k:[1]': {} } })] } }
  t.same(diffObject(desired, live).fields, ['.metadata.finalizers["b"]'])
})

t.test('a field we own only through its children is reported child by child when the parent is gone', async (t) => {
  const live = withManaged(liveDeployment(), applyEntry({ 'f:spec': { 'f:template': { 'f:spec': { 'f:nodeSelector': {}, 'f:affinity': { '.': {}, 'f:podAntiAffinity': {} } } } }, 'f:status': { 'f:a': {}, 'f:b': { 'f:c': {} } } }))
  const desired = desiredDeployment()
  t.same(diffObject(desired, live).fields, ['.spec.template.spec.nodeSelector', '.spec.template.spec.affinity', '.status.a', '.status.b.c'])
})

t.test('list-map topology of the managed kinds', async (t) => {
  const cases: [string[], readonly string[] | undefined][] = [
    [['spec', 'template', 'spec', 'containers'], ['name']],
    [['spec', 'template', 'spec', 'initContainers'], ['name']],
    [['spec', 'template', 'spec', 'containers', 'ports'], ['containerPort', 'protocol']],
    [['spec', 'ports'], ['port', 'protocol']],
    [['spec', 'template', 'spec', 'containers', 'env'], ['name']],
    [['spec', 'template', 'spec', 'containers', 'volumeMounts'], ['mountPath']],
    [['spec', 'template', 'spec', 'volumes'], ['name']],
    [['spec', 'template', 'spec', 'imagePullSecrets'], ['name']],
    [['spec', 'template', 'spec', 'topologySpreadConstraints'], ['topologyKey', 'whenUnsatisfiable']],
    [['status', 'conditions'], ['type']],
    [['metadata', 'ownerReferences'], ['uid']],
    [['spec', 'template', 'spec', 'containers', 'args'], undefined],
    [['spec', 'template', 'spec', 'tolerations'], undefined],
    [['spec', 'template', 'spec', 'containers', 'envFrom'], undefined],
    [['status', 'loadBalancer', 'ingress', 'ports'], undefined],
    [['toString'], undefined],
    [[], undefined],
  ]
  for (const [path, keys] of cases) t.same(listMapKeys(path), keys, path.join('.') || '(root)')
  for (const p of [['spec', 'selector'], ['spec', 'template', 'spec', 'nodeSelector'], ['x', 'labelSelector'], ['x', 'namespaceSelector']]) t.ok(isAtomicMap(p), `${p.join('.')} is atomic`)
  t.notOk(isAtomicMap(['metadata', 'labels']))
  t.notOk(isAtomicMap([]))
})

t.test('normalisation: canonical quantities, keyed list-maps, nothing empty', async (t) => {
  t.same(normalize({ spec: { resources: { requests: { cpu: 0.5, memory: '1024Mi' }, limits: { cpu: '1000m', 'nvidia.com/gpu': 1 } } } }), { spec: { resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', 'nvidia.com/gpu': '1' } } } })
  t.same(normalize({ emptyDir: { sizeLimit: '1024Mi' }, overhead: { cpu: '0.1' } }), { emptyDir: { sizeLimit: '1Gi' }, overhead: { cpu: '100m' } })
  t.same(normalize({ resources: { requests: { cpu: 'lots' } } }), { resources: { requests: { cpu: 'lots' } } }, 'a value that is not a quantity is compared as written')
  t.same(normalize({ replicas: 1000, memoryMB: '1024Mi' }), { replicas: 1000, memoryMB: '1024Mi' }, 'only quantity fields are re-spelled')
  t.same(normalize({ spec: { ports: [{ port: 80 }, { port: 80, protocol: 'UDP' }] } }), { spec: { ports: { '[port=80,protocol="TCP"]': { port: 80 }, '[port=80,protocol="UDP"]': { port: 80, protocol: 'UDP' } } } })
  t.same(normalize({ a: null, b: [], c: {}, d: { e: [] }, f: [null, 1] }), { f: [null, 1] }, 'items of atomic lists keep their places')
  t.same(normalize({ containers: [{ name: 'x', env: null }] }), { containers: { '[name="x"]': { name: 'x' } } })
  t.equal(normalize({}), undefined)
  t.equal(keySegment(['protocol', 'containerPort'], { containerPort: 1 }), '[containerPort=1,protocol="TCP"]', 'key fields sorted, defaults filled')
  t.equal(keySegment(['name'], {}), '[name=null]')
})

t.test('projection keeps only the desired shape and matches list-maps by key', async (t) => {
  const desired = { metadata: { name: 'a', labels: { x: '1' } }, spec: { containers: [{ name: 'b', image: 'i' }, { name: 'gone', image: 'j' }], selector: { a: '1' }, args: ['x'] } }
  const live = { metadata: { name: 'a', uid: 'u', labels: { x: '1', y: '2' } }, spec: { containers: [{ name: 'c', image: 'k' }, { name: 'b', image: 'i', imagePullPolicy: 'Always' }, 'garbage'], selector: { a: '1', b: '2' }, args: ['x', 'y'], replicas: 1 }, status: { replicas: 1 } }
  t.same(projectOnto(desired, live), { metadata: { name: 'a', labels: { x: '1' } }, spec: { containers: [{ name: 'b', image: 'i' }], selector: { a: '1', b: '2' }, args: ['x', 'y'] } })
  t.same(projectOnto({ a: { b: 1 } }, { a: 'scalar' }), { a: 'scalar' }, 'a type change comes back as is')
  t.equal(projectOnto({ a: 1 }, undefined), undefined)
  t.same(projectOnto({ containers: ['not a map'] }, { containers: [{ name: 'x' }] }), { containers: [] }, 'desired items that are not maps match nothing')
})

t.test('readable paths in the API server syntax', async (t) => {
  t.equal(readablePath(''), '.')
  t.equal(readablePath('/spec/replicas'), '.spec.replicas')
  t.equal(readablePath('/spec/containers/[name="a"]/args/10'), '.spec.containers[name="a"].args[10]')
  t.equal(readablePath('/metadata/annotations/example.com~1a~0b'), '.metadata.annotations.example.com/a~b')
  t.equal(readablePath('/spec/volumeMounts/[mountPath="~1data"]'), '.spec.volumeMounts[mountPath="/data"]')
})
