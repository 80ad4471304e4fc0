import t from 'tap'
import { builtinTopology, hasBuiltinTopology, serverSideApply, topologyFromOpenAPI, toFieldsV1, toFieldSet, customResourceTopology } from '../operator/sandbox/apply/index.ts'
import type { KubeObject, Topology } from '../operator/sandbox/types.ts'

function at(t: Topology, path: string[]): Topology | undefined {
  let cur: Topology | undefined = t
  for (const p of path) {
    if (cur === undefined) return undefined
    if (p === '[]') cur = cur.type === 'list' ? cur.items : undefined
    else cur = cur.type === 'struct' ? cur.fields[p] : cur.type === 'map' ? cur.values : undefined
  }
  return cur
}

function describe(t: Topology | undefined): string {
  if (t === undefined) return 'open'
  switch (t.type) {
    case 'list':
      return t.listType === 'map' ? `map[${(t.keys ?? []).join(',')}]` : t.listType
    case 'map':
      return t.atomic ? 'atomic map' : 'map'
    case 'struct':
      return t.atomic ? 'atomic struct' : 'struct'
    default:
      return t.type
  }
}

t.test('built-in topologies follow the reference table', async (t) => {
  const d = builtinTopology('apps', 'v1', 'Deployment')
  const ps = ['spec', 'template', 'spec']
  const c = [...ps, 'containers', '[]']
  const table: [Topology, string[], string][] = [
    [d, [...ps, 'containers'], 'map[name]'],
    [d, [...ps, 'initContainers'], 'map[name]'],
    [d, [...c, 'ports'], 'map[containerPort,protocol]'],
    [d, [...c, 'env'], 'map[name]'],
    [d, [...c, 'envFrom'], 'atomic'],
    [d, [...c, 'volumeMounts'], 'map[mountPath]'],
    [d, [...c, 'args'], 'atomic'],
    [d, [...c, 'command'], 'atomic'],
    [d, [...ps, 'volumes'], 'map[name]'],
    [d, [...ps, 'imagePullSecrets'], 'map[name]'],
    [d, [...ps, 'tolerations'], 'atomic'],
    [d, [...ps, 'topologySpreadConstraints'], 'map[topologyKey,whenUnsatisfiable]'],
    [d, [...ps, 'nodeSelector'], 'atomic map'],
    [d, ['spec', 'selector'], 'atomic struct'],
    [d, ['status', 'conditions'], 'map[type]'],
    [d, ['metadata', 'labels'], 'map'],
    [d, ['metadata', 'annotations'], 'map'],
    [d, ['metadata', 'finalizers'], 'set'],
    [d, ['metadata', 'ownerReferences'], 'map[uid]'],
    [d, ['metadata', 'ownerReferences', '[]'], 'atomic struct'],
    [builtinTopology('', 'v1', 'Service'), ['spec', 'ports'], 'map[port,protocol]'],
    [builtinTopology('', 'v1', 'Service'), ['spec', 'selector'], 'atomic map'],
    [builtinTopology('', 'v1', 'Service'), ['spec', 'clusterIPs'], 'atomic'],
    [builtinTopology('', 'v1', 'Service'), ['spec', 'ipFamilies'], 'atomic'],
    [builtinTopology('policy', 'v1', 'PodDisruptionBudget'), ['spec', 'selector'], 'atomic struct'],
    [builtinTopology('', 'v1', 'Pod'), ['spec', 'containers'], 'map[name]'],
    [builtinTopology('', 'v1', 'Pod'), ['status', 'conditions'], 'map[type]'],
    [builtinTopology('apps', 'v1', 'ReplicaSet'), ['spec', 'template', 'spec', 'containers'], 'map[name]'],
    [builtinTopology('', 'v1', 'ConfigMap'), ['data'], 'map'],
    [builtinTopology('', 'v1', 'Secret'), ['stringData'], 'map'],
    [builtinTopology('', 'v1', 'Namespace'), ['status', 'conditions'], 'map[type]'],
  ]
  for (const [topo, path, want] of table) t.equal(describe(at(topo, path)), want, path.join('.'))
  for (const [g, v, k] of [['', 'v1', 'ServiceAccount'], ['', 'v1', 'Event'], ['events.k8s.io', 'v1', 'Event'], ['coordination.k8s.io', 'v1', 'Lease'], ['apiextensions.k8s.io', 'v1', 'CustomResourceDefinition']] as const) {
    t.ok(hasBuiltinTopology(g, v, k), k)
  }
  t.notOk(hasBuiltinTopology('x', 'v1', 'Y'))
  t.equal(describe(at(builtinTopology('x', 'v1', 'Y'), ['metadata', 'labels'])), 'map', 'unknown kinds still have typed metadata')
})

const SCHEMA = {
  type: 'object',
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: {
      type: 'object',
      properties: {
        size: { type: 'integer' },
        port: { 'x-kubernetes-int-or-string': true },
        extraArgs: { type: 'array', items: { type: 'string' } },
        tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
        servers: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name', 'protocol'],
          items: { type: 'object', properties: { name: { type: 'string' }, protocol: { type: 'string', default: 'TCP' }, weight: { type: 'integer' } } },
        },
        nodeSelector: { type: 'object', additionalProperties: { type: 'string' }, 'x-kubernetes-map-type': 'atomic' },
        podAnnotations: { type: 'object', additionalProperties: { type: 'string' } },
        affinity: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        resources: { type: 'object', properties: { limits: { type: 'object' } }, 'x-kubernetes-preserve-unknown-fields': true },
        selector: { type: 'object', properties: { a: { type: 'string' } }, 'x-kubernetes-map-type': 'atomic' },
      },
    },
    status: { type: 'object', properties: { conditions: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'], items: { type: 'object' } } } },
  },
}

t.test('CRD openAPIV3Schema → topology', async (t) => {
  const topo = topologyFromOpenAPI(SCHEMA)
  const table: [string[], string][] = [
    [['spec', 'size'], 'scalar'],
    [['spec', 'port'], 'scalar'],
    [['spec', 'extraArgs'], 'atomic'],
    [['spec', 'tags'], 'set'],
    [['spec', 'servers'], 'map[name,protocol]'],
    [['spec', 'nodeSelector'], 'atomic map'],
    [['spec', 'podAnnotations'], 'map'],
    [['spec', 'affinity'], 'any'],
    [['spec', 'resources'], 'struct'],
    [['spec', 'selector'], 'atomic struct'],
    [['status', 'conditions'], 'map[type]'],
    [['metadata', 'finalizers'], 'set'],
  ]
  for (const [path, want] of table) t.equal(describe(at(topo, path)), want, path.join('.'))
  const servers = at(topo, ['spec', 'servers'])
  t.same(servers?.type === 'list' ? servers.keyDefaults : undefined, { protocol: 'TCP' })
  t.equal(at(topo, ['spec', 'resources'])?.type === 'struct' && (at(topo, ['spec', 'resources']) as { preserveUnknown?: boolean }).preserveUnknown, true)
  t.equal(describe(at(customResourceTopology({ type: 'any' }), ['metadata', 'labels'])), 'map')
  t.equal(topologyFromOpenAPI(null).type, 'struct', 'no schema: metadata typed, body open')
})

t.test('a custom resource applies with its list-map keys and defaults', async (t) => {
  const topo = topologyFromOpenAPI(SCHEMA)
  const cr = (servers: unknown[]): KubeObject => ({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'm' }, spec: { size: 1, servers, extraArgs: ['-a'], resources: { limits: { cpu: 1 }, extra: { x: 1 } } } })
  const first = serverSideApply(undefined, cr([{ name: 'a', weight: 1 }]), { manager: 'm', force: false, topology: topo, now: '2026-01-01T00:00:00Z', apiVersion: 'cache.example.com/v1alpha1', resetFields: [['status']] })
  t.ok(first.ok)
  if (!first.ok) return
  t.strictSame(first.object.metadata.managedFields?.[0]?.fieldsV1, {
    'f:spec': {
      'f:extraArgs': {},
      'f:resources': { 'f:extra': { '.': {}, 'f:x': {} }, 'f:limits': { 'f:cpu': {} } },
      'f:servers': { 'k:{"name":"a","protocol":"TCP"}': { '.': {}, 'f:name': {}, 'f:weight': {} } },
      'f:size': {},
    },
  })
  t.same(toFieldsV1(toFieldSet({ spec: { tags: ['x', 'y'] } }, topo, 'x')), { 'f:spec': { 'f:tags': { 'v:"x"': {}, 'v:"y"': {} } } })
})

t.test('typed/helpers.go (v6.3.0): a key field without a default may be absent; an item without any key field cannot be applied', async (t) => {
  const topo = customResourceTopology({
    type: 'struct',
    fields: { spec: { type: 'struct', fields: { items: { type: 'list', listType: 'map', keys: ['name', 'id'], items: { type: 'struct', fields: {} } } } } },
  })
  const apply = (items: unknown[]) => serverSideApply(undefined, { apiVersion: 'x/v1', kind: 'X', metadata: { name: 'x' }, spec: { items } } as KubeObject, { manager: 'm', force: false, topology: topo, now: '2026-01-01T00:00:00Z', apiVersion: 'x/v1' })
  const r = apply([{ name: 'a' }, { name: 'a', id: 1 }])
  t.ok(r.ok, 'two distinct items: {name: a} and {name: a, id: 1}')
  if (r.ok) t.same(Object.keys((r.object.metadata.managedFields?.[0]?.fieldsV1 as any)['f:spec']['f:items']), ['k:{"id":1,"name":"a"}', 'k:{"name":"a"}'])
  t.throws(() => apply([{ value: 1 }]), {
    name: 'ApplyTypeError',
    message: 'failed to create typed patch object (x/v1, Kind=X): .spec.items: element 0: associative list with keys has an element that omits all key fields ["name" "id"] (and doesn\'t have default values for any key fields)',
  })
})
