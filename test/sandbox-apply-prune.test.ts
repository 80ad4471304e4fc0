/**
 * What an apply removes when the applier stops applying something that another manager changed
 * or added to: structured-merge-diff merge/update.go (`prune`, `addBackOwnedItems`,
 * `addBackDanglingItems`) and typed/remove.go, as kube-apiserver 1.34 runs them. Requests go
 * through the cluster core, so the whole write pipeline (defaulting, validation) is exercised.
 */
import t, { type Test } from 'tap'
import { createCluster } from '../operator/sandbox/index.ts'
import type { Cluster } from '../operator/sandbox/cluster.ts'
import { call, type Result } from './support/sandbox-requests.ts'

const D = '/apis/apps/v1/namespaces/default/deployments'

interface Container {
  name: string
  image: string
  env?: { name: string; value?: string }[]
}

function deployment(containers: Container[]): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x', namespace: 'default' },
    spec: {
      selector: { matchLabels: { app: 'x' } },
      template: { metadata: { labels: { app: 'x' } }, spec: { containers } },
    },
  }
}

function containers(o: Result['body']): Container[] {
  return o.spec.template.spec.containers
}

function entry(o: Result['body'], manager: string): { fieldsV1: Record<string, unknown> } | undefined {
  return (o.metadata.managedFields as { manager: string; fieldsV1: Record<string, unknown> }[]).find((e) => e.manager === manager)
}

function status(tt: Tap, r: Result, code: number): Result['body'] {
  tt.equal(r.status, code, r.status === code ? `HTTP ${code}` : JSON.stringify(r.body).slice(0, 300))
  return r.body
}

type Tap = Test

/** `kubectl edit`: GET, change, PUT with the fieldManager kubectl-edit. */
function edit(tt: Tap, c: Cluster, change: (o: Result['body']) => void): Result['body'] {
  const live = call(c, `GET ${D}/x`).body
  change(live)
  return status(tt, call(c, `PUT ${D}/x?fieldManager=kubectl-edit`, live), 200)
}

function apply(c: Cluster, cs: Container[]): Result {
  return call(c, `PATCH ${D}/x?fieldManager=op`, deployment(cs), { type: 'apply' })
}

t.test('merge/update.go prune: a dropped container in which kubectl edit added an env var is removed whole', async (t) => {
  const c = createCluster()
  status(t, apply(c, [{ name: 'app', image: 'a:1' }, { name: 'sidecar', image: 's:1' }]), 201)
  const edited = edit(t, c, (o) => {
    containers(o)[1]!.env = [{ name: 'DEBUG', value: '1' }]
  })
  t.ok(entry(edited, 'kubectl-edit'), 'kubectl-edit owns the env var it added')

  const after = status(t, apply(c, [{ name: 'app', image: 'a:1' }]), 200)
  t.same(containers(after).map((x) => x.name), ['app'], 'the sidecar is gone, env var and all')
  t.notOk(entry(after, 'kubectl-edit'), 'kubectl-edit owned only fields of the removed item: its entry is dropped')
  t.same(
    Object.keys((entry(after, 'op')?.fieldsV1['f:spec'] as any)['f:template']['f:spec']['f:containers']),
    ['k:{"name":"app"}'],
  )
})

t.test('merge/update.go prune: a dropped env var whose value someone else changed is removed whole', async (t) => {
  const c = createCluster()
  const env = [{ name: 'A', value: '1' }, { name: 'B', value: '2' }]
  status(t, apply(c, [{ name: 'app', image: 'a:1', env }]), 201)
  edit(t, c, (o) => {
    containers(o)[0]!.env![1]!.value = '3'
  })
  const after = status(t, apply(c, [{ name: 'app', image: 'a:1', env: [{ name: 'A', value: '1' }] }]), 200)
  t.same(containers(after)[0]!.env, [{ name: 'A', value: '1' }])
  t.notOk(entry(after, 'kubectl-edit'), 'the editor loses the value of the removed item')
})

t.test('merge/update.go prune: a field kubectl edit added to a struct the applier drops keeps the struct', async (t) => {
  // Struct fields are "named fields": EnsureNamedFieldsAreMembers makes the editor's
  // resources.limits.cpu keep resources and limits, so only the applier's own member goes.
  const c = createCluster()
  const withLimits = [{ name: 'app', image: 'a:1', resources: { limits: { memory: '1Gi' } } }] as unknown as Container[]
  status(t, apply(c, withLimits), 201)
  edit(t, c, (o) => {
    ;(containers(o)[0] as any).resources.limits.cpu = '1'
  })
  const after = status(t, apply(c, [{ name: 'app', image: 'a:1' }]), 200)
  t.same((containers(after)[0] as any).resources, { limits: { cpu: '1' } })
})

t.test('merge/update.go prune: an item another applier still applies stays, with the other applier\'s fields', async (t) => {
  const c = createCluster()
  status(t, apply(c, [{ name: 'app', image: 'a:1' }, { name: 'sidecar', image: 's:1' }]), 201)
  const other = deployment([{ name: 'sidecar', image: 's:1', env: [{ name: 'X', value: 'y' }] }])
  status(t, call(c, `PATCH ${D}/x?fieldManager=other`, other, { type: 'apply' }), 200)
  const after = status(t, apply(c, [{ name: 'app', image: 'a:1' }]), 200)
  t.same(containers(after).map((x) => [x.name, x.image, x.env]), [['app', 'a:1', undefined], ['sidecar', 's:1', [{ name: 'X', value: 'y' }]]])
})

// Duplicate keys: typed/compare.go and typed/merge.go at structured-merge-diff v6.3.0
// (merge/duplicates_test.go holds the same cases on a test schema).
function envOf(o: Result['body']): { name: string; value?: string }[] | undefined {
  return containers(o)[0]!.env
}

function envFields(o: Result['body'], manager: string): Record<string, unknown> | undefined {
  const f = entry(o, manager)?.fieldsV1 as any
  return f?.['f:spec']?.['f:template']?.['f:spec']?.['f:containers']?.['k:{"name":"app"}']?.['f:env']
}

function withDuplicate(tt: Tap): Cluster {
  const c = createCluster()
  status(tt, apply(c, [{ name: 'app', image: 'a:1', env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] }]), 201)
  edit(tt, c, (o) => {
    containers(o)[0]!.env = [{ name: 'A', value: '1' }, { name: 'A', value: 'again' }, { name: 'B', value: '2' }]
  })
  return c
}

t.test('duplicates_test.go list/ownership: an update that repeats a key owns the key alone, nothing below it', async (t) => {
  const c = withDuplicate(t)
  const live = call(c, `GET ${D}/x`).body
  t.same(envOf(live), [{ name: 'A', value: '1' }, { name: 'A', value: 'again' }, { name: 'B', value: '2' }], 'the duplicates are stored')
  t.same(envFields(live, 'kubectl-edit'), { 'k:{"name":"A"}': {} })
  t.same(envFields(live, 'op'), { 'k:{"name":"B"}': { '.': {}, 'f:name': {}, 'f:value': {} } }, 'the applier lost A and what it owned below it')
})

t.test('duplicates_test.go merging: an apply that leaves a repeated key alone keeps every repeat', async (t) => {
  const c = withDuplicate(t)
  const after = status(t, apply(c, [{ name: 'app', image: 'a:1', env: [{ name: 'B', value: '2' }, { name: 'C', value: '3' }] }]), 200)
  t.same(envOf(after), [{ name: 'A', value: '1' }, { name: 'A', value: 'again' }, { name: 'B', value: '2' }, { name: 'C', value: '3' }])
  t.same(envFields(after, 'kubectl-edit'), { 'k:{"name":"A"}': {} })
})

t.test('duplicates_test.go merging: applying a repeated key conflicts with its owner, and forced replaces every repeat', async (t) => {
  const c = withDuplicate(t)
  const cs = [{ name: 'app', image: 'a:1', env: [{ name: 'A', value: '5' }, { name: 'B', value: '2' }] }]
  const refused = status(t, apply(c, cs), 409)
  t.equal(refused.message, 'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.template.spec.containers[name="app"].env[name="A"]')
  const forced = status(t, call(c, `PATCH ${D}/x?fieldManager=op&force=true`, deployment(cs), { type: 'apply' }), 200)
  t.same(envOf(forced), [{ name: 'A', value: '5' }, { name: 'B', value: '2' }], 'one item, the applied one, not merged with the repeats')
  t.notOk(entry(forced, 'kubectl-edit'), 'the editor owned only the repeated key')
  t.same(envFields(forced, 'op'), {
    'k:{"name":"A"}': { '.': {}, 'f:name': {}, 'f:value': {} },
    'k:{"name":"B"}': { '.': {}, 'f:name': {}, 'f:value': {} },
  })
})

t.test('an applied configuration that repeats a key is still refused (500, typed conversion)', async (t) => {
  const c = createCluster()
  const r = apply(c, [{ name: 'app', image: 'a:1', env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }] }])
  status(t, r, 500)
  t.match(r.body.message, /duplicate entries for key \[name="A"\]/)
})
