import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { humanDuration, lookupPath, parseJsonPath, toTable } from '../operator/sandbox/table.ts'
import { builtinSpecs } from '../operator/kube/builtin/kinds.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { startControllers } from '../operator/sandbox/controllers/index.ts'
import type { ApiRequest, KubeObject, ResourceType } from '../operator/sandbox/types.ts'
import { kubectlPath } from './support/tools.ts'

type Obj = Record<string, any>

function builtin(resource: string, group = ''): ResourceType {
  const s = builtinSpecs.find((b) => b.resource === resource && b.group === group)
  if (!s) throw new Error(resource)
  return { group: s.group, version: s.version, resource: s.resource, singular: s.singular, kind: s.kind, listKind: `${s.kind}List`, namespaced: s.namespaced, verbs: [], subresources: {}, topology: { type: 'any' }, custom: false, generation: s.generation }
}

// One clock reading for the objects' timestamps and the table's ages: ages are then exact, however
// long the test takes to get from building an object to rendering its table.
const NOW = Date.parse('2026-03-04T05:06:07.089Z')
const ago = (ms: number) => new Date(NOW - ms).toISOString()
const meta = (name: string, ageMs = 65_000) => ({ name, namespace: 'default', creationTimestamp: ago(ageMs) })

function table(type: ResourceType, objects: Obj[], includeObject: 'None' | 'Metadata' | 'Object' = 'None'): Obj {
  return toTable(type, objects as KubeObject[], { resourceVersion: '42', continue: 'abc' }, includeObject, NOW) as Obj
}

t.test('HumanDuration as kubectl shows ages', async (t) => {
  const s = 1000
  const cases: [number, string][] = [[-5 * s, '<invalid>'], [-500, '0s'], [0, '0s'], [119 * s, '119s'], [120 * s, '2m'], [185 * s, '3m5s'], [42 * 60 * s, '42m'], [5 * 3600 * s + 3 * 60 * s, '5h3m'], [6 * 3600 * s, '6h'], [30 * 3600 * s, '30h'], [52 * 3600 * s, '2d4h'], [72 * 3600 * s, '3d'], [400 * 86400 * s, '400d'], [(3 * 365 + 20) * 86400 * s, '3y20d'], [(3 * 365) * 86400 * s, '3y'], [9 * 365 * 86400 * s, '9y']]
  for (const [ms, want] of cases) t.equal(humanDuration(ms), want, want)
})

t.test('printer-column JSONPath', async (t) => {
  t.same(parseJsonPath(".status.conditions[0].type"), ['status', 'conditions', 0, 'type'])
  t.same(parseJsonPath("{.metadata.labels['app.kubernetes.io/name']}"), ['metadata', 'labels', 'app.kubernetes.io/name'])
  const o = { a: { b: [{ c: 1 }] } }
  t.equal(lookupPath(o, parseJsonPath('.a.b[0].c')), 1)
  t.equal(lookupPath(o, parseJsonPath('.a.b.c')), undefined)
  t.equal(lookupPath(o, parseJsonPath('.a[0]')), undefined)
  t.equal(lookupPath(o, parseJsonPath('.x.y')), undefined)
  // Filters as kubebuilder's printer columns write them (client-go jsonpath; the first result is the cell).
  const cr = { status: { conditions: [{ type: 'Available', reason: 'A', n: 1 }, { type: 'Ready', reason: 'Reconciled', n: 2 }, { type: 'Ready', reason: 'Second' }] } }
  t.equal(lookupPath(cr, parseJsonPath('.status.conditions[?(@.type=="Ready")].reason')), 'Reconciled')
  t.equal(lookupPath(cr, parseJsonPath(".status.conditions[?(@.type=='Available')].reason")), 'A')
  t.equal(lookupPath(cr, parseJsonPath('.status.conditions[?(@.type!="Available")].reason')), 'Reconciled')
  t.equal(lookupPath(cr, parseJsonPath('.status.conditions[?(@.n==2)].type')), 'Ready')
  t.equal(lookupPath(cr, parseJsonPath('.status.conditions[?(@.type=="Missing")].reason')), undefined)
  t.equal(lookupPath({ status: {} }, parseJsonPath('.status.conditions[?(@.type=="Ready")].reason')), undefined)
})

t.test('custom resource cells follow the column type', async (t) => {
  const type: ResourceType = { ...builtin('configmaps'), group: 'x.io', resource: 'things', kind: 'Thing', custom: true, printerColumns: [
    { name: 'Int', type: 'integer', jsonPath: '.spec.i' }, { name: 'Num', type: 'number', jsonPath: '.spec.n' }, { name: 'Bool', type: 'boolean', jsonPath: '.spec.b' },
    { name: 'Str', type: 'string', jsonPath: '.spec.s' }, { name: 'Obj', type: 'string', jsonPath: '.spec.o', priority: 1, description: 'an object', format: 'byte' }, { name: 'Created', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    { name: 'Wrong', type: 'integer', jsonPath: '.spec.s' },
  ] }
  const tb = table(type, [{ apiVersion: 'x.io/v1', kind: 'Thing', metadata: meta('t'), spec: { i: 2.7, n: 1.5, b: true, s: 'hi', o: { k: 1 } } }], 'Object')
  t.same(tb.columnDefinitions[5], { name: 'Obj', type: 'string', format: 'byte', description: 'an object', priority: 1 })
  t.same(tb.rows[0].cells, ['t', 2, 1.5, true, 'hi', '{"k":1}', '65s', null])
  t.equal(tb.rows[0].object.kind, 'Thing', 'includeObject=Object carries the whole object')
  t.same(tb.metadata, { resourceVersion: '42', continue: 'abc' })
  const none = table({ ...type, printerColumns: [] }, [{ apiVersion: 'x.io/v1', kind: 'Thing', metadata: meta('t') }])
  t.same(none.columnDefinitions.map((c: Obj) => c.name), ['Name'])
  t.notOk('object' in none.rows[0], 'includeObject=None carries no object')
})

t.test('built-in kinds get the columns kubectl users know', async (t) => {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: meta('p'), spec: { nodeName: 'sandbox-node', containers: [{ name: 'a' }, { name: 'b' }] }, status: { phase: 'Running', podIP: '10.244.0.2', containerStatuses: [{ name: 'a', ready: true, restartCount: 1, state: { running: {} } }, { name: 'b', ready: false, restartCount: 2, state: { waiting: { reason: 'CrashLoopBackOff' } } }] } }
  const pods = table(builtin('pods'), [pod, { ...pod, metadata: { ...meta('q'), deletionTimestamp: ago(0) } }, { apiVersion: 'v1', kind: 'Pod', metadata: meta('r'), spec: { containers: [{ name: 'a' }] }, status: { phase: 'Failed', containerStatuses: [{ name: 'a', state: { terminated: { exitCode: 3 } } }] } }])
  t.same(pods.columnDefinitions.map((c: Obj) => [c.name, c.priority]), [['Name', 0], ['Ready', 0], ['Status', 0], ['Restarts', 0], ['Age', 0], ['IP', 1], ['Node', 1], ['Nominated Node', 1], ['Readiness Gates', 1]])
  t.same(pods.rows[0].cells, ['p', '1/2', 'CrashLoopBackOff', '3', '65s', '10.244.0.2', 'sandbox-node', '<none>', '<none>'])
  t.equal(pods.rows[1].cells[2], 'Terminating')
  t.equal(pods.rows[2].cells[2], 'ExitCode:3')
  const dep = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta('d'), spec: { replicas: 3, selector: { matchLabels: { b: '2', a: '1' }, matchExpressions: [{ key: 'x', operator: 'In', values: ['u', 'v'] }, { key: 'y', operator: 'NotIn', values: ['w'] }, { key: 'z', operator: 'Exists' }, { key: 'q', operator: 'DoesNotExist' }] }, template: { spec: { containers: [{ name: 'm', image: 'memcached:1' }, { name: 'e', image: 'exporter:2' }] } } }, status: { readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 } }
  const deps = table(builtin('deployments', 'apps'), [dep])
  t.same(deps.columnDefinitions.map((c: Obj) => c.name), ['Name', 'Ready', 'Up-to-date', 'Available', 'Age', 'Containers', 'Images', 'Selector'])
  t.same(deps.rows[0].cells, ['d', '2/3', 3, 2, '65s', 'm,e', 'memcached:1,exporter:2', 'a=1,b=2,x in (u,v),y notin (w),z,!q'])
  const rss = table(builtin('replicasets', 'apps'), [{ ...dep, kind: 'ReplicaSet', status: { replicas: 3, readyReplicas: 1 } }])
  t.same(rss.rows[0].cells.slice(0, 5), ['d', 3, 3, 1, '65s'])
  const svc = table(builtin('services'), [{ apiVersion: 'v1', kind: 'Service', metadata: meta('s'), spec: { type: 'ClusterIP', clusterIP: '10.96.0.10', ports: [{ port: 11211, protocol: 'TCP' }, { port: 9150, nodePort: 30001, protocol: 'UDP' }], selector: { app: 'x' } } }, { apiVersion: 'v1', kind: 'Service', metadata: meta('h'), spec: { clusterIP: 'None' } }])
  t.same(svc.rows[0].cells, ['s', 'ClusterIP', '10.96.0.10', '<none>', '11211/TCP,9150:30001/UDP', '65s', 'app=x'])
  t.same(svc.rows[1].cells, ['h', 'ClusterIP', 'None', '<none>', '<none>', '65s', '<none>'])
  t.same(table(builtin('namespaces'), [{ apiVersion: 'v1', kind: 'Namespace', metadata: meta('n'), status: { phase: 'Active' } }]).rows[0].cells, ['n', 'Active', '65s'])
  t.same(table(builtin('configmaps'), [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('c'), data: { a: '1', b: '2' } }]).rows[0].cells, ['c', 2, '65s'])
  t.same(table(builtin('secrets'), [{ apiVersion: 'v1', kind: 'Secret', metadata: meta('s'), type: 'Opaque', data: { a: 'eA==' } }]).rows[0].cells, ['s', 'Opaque', 1, '65s'])
  t.same(table(builtin('serviceaccounts'), [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta('sa') }]).rows[0].cells, ['sa', '0', '65s'])
  t.same(table(builtin('poddisruptionbudgets', 'policy'), [{ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: meta('pdb'), spec: { minAvailable: 1 }, status: { disruptionsAllowed: 2 } }]).rows[0].cells, ['pdb', '1', 'N/A', 2, '65s'])
  t.same(table(builtin('leases', 'coordination.k8s.io'), [{ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: meta('l'), spec: { holderIdentity: 'me' } }]).rows[0].cells, ['l', 'me', '65s'])
  const crdTs = ago(0)
  t.same(table(builtin('customresourcedefinitions', 'apiextensions.k8s.io'), [{ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'x.y.z', creationTimestamp: crdTs } }]).rows[0].cells, ['x.y.z', crdTs])
  const ev = table(builtin('events'), [{ apiVersion: 'v1', kind: 'Event', metadata: meta('e'), type: 'Normal', reason: 'Scheduled', involvedObject: { kind: 'Pod', name: 'p' }, message: 'hi', lastTimestamp: ago(3000) }])
  t.same(ev.columnDefinitions.map((c: Obj) => c.name), ['Last Seen', 'Type', 'Reason', 'Object', 'Message'])
  t.same(ev.rows[0].cells, ['3s', 'Normal', 'Scheduled', 'pod/p', 'hi'])
  t.same(table({ ...builtin('configmaps'), resource: 'widgets' }, [{ apiVersion: 'v1', kind: 'Widget', metadata: meta('w') }], 'Metadata').rows[0], { cells: ['w', '65s'], object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: meta('w') } })
  t.equal(table(builtin('configmaps'), [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', creationTimestamp: 'not a time' } }]).rows[0].cells[2], '<invalid>')
  const ages = table(builtin('configmaps'), [119_999, 120_000, 185_000].map((ms) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(`c${ms}`, ms) })))
  t.same(ages.rows.map((r: Obj) => r.cells[2]), ['119s', '2m', '3m5s'], 'ages are exact at the table\'s clock reading, up to the millisecond')
})

t.test('kubectl get pods and deployments print the familiar columns', async (t) => {
  const sb = await startSandbox({ controllers: false })
  const controllers = startControllers(sb.cluster, { podReadyDelayMs: 10 })
  t.teardown(async () => {
    await controllers.stop()
    await sb.close()
  })
  await sb.cluster.handle({ verb: 'create', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', query: new URLSearchParams(), body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'memcached:1.6' }] } } } } } as ApiRequest)
  const kubectl = (...args: string[]) => promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args])
  await kubectl('wait', '--for=condition=Available', 'deployment/web', '--timeout=20s')
  const deps = (await kubectl('get', 'deployments')).stdout.trim().split('\n')
  t.match(deps[0], /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE$/)
  t.match(deps[1], /^web\s+2\/2\s+2\s+2\s+\d+s$/)
  const pods = (await kubectl('get', 'pods')).stdout.trim().split('\n')
  t.match(pods[0], /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/)
  t.equal(pods.length, 3)
  for (const line of pods.slice(1)) t.match(line, /^web-[a-z0-9]+-[a-z0-9]{5}\s+1\/1\s+Running\s+0\s+\d+s$/)
})
