import t from 'tap'
import {
  ApplyTypeError,
  builtinTopology,
  customResourceTopology,
  deepEqual,
  omitEmpty,
  serverSideApply,
  trackUpdate,
  type ApplyOptions,
  type ApplyResult,
} from '../operator/sandbox/apply/index.ts'
import { defaultBuiltin } from '../operator/kube/builtin/defaults.ts'
import type { KubeObject, ManagedFieldsEntry } from '../operator/sandbox/types.ts'

const DEPLOY = builtinTopology('apps', 'v1', 'Deployment')
const T0 = '2026-01-01T00:00:00Z'
const T1 = '2026-01-01T00:01:00Z'
const T2 = '2026-01-01T00:02:00Z'
const T3 = '2026-01-01T00:03:00Z'

interface Container {
  name: string
  image: string
  [k: string]: unknown
}

function deployment(spec: Record<string, unknown> = {}, containers: Container[] = [{ name: 'app', image: 'memcached:1.6' }], labels?: Record<string, string>): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x', namespace: 'default', ...(labels ? { labels } : {}) },
    spec: {
      selector: { matchLabels: { app: 'x' } },
      template: { metadata: { labels: { app: 'x' } }, spec: { containers } },
      ...spec,
    },
  }
}

function opts(manager: string, now: string, extra: Partial<ApplyOptions> = {}): ApplyOptions {
  return { manager, force: false, topology: DEPLOY, now, apiVersion: 'apps/v1', resetFields: [['status']], defaulter: (o) => defaultBuiltin(o), ...extra }
}

function ok(t: { fail: (message: string) => unknown }, r: ApplyResult): KubeObject {
  if (!r.ok) {
    t.fail(r.message)
    throw new Error(r.message)
  }
  return r.object
}

function entry(obj: KubeObject, manager: string, operation?: string): ManagedFieldsEntry | undefined {
  return obj.metadata.managedFields?.find((e) => e.manager === manager && (operation === undefined || e.operation === operation))
}

function spec(o: KubeObject): Record<string, unknown> {
  return o.spec as Record<string, unknown>
}

function podSpec(o: KubeObject): { containers: Container[] } & Record<string, unknown> {
  return (spec(o).template as { spec: { containers: Container[] } & Record<string, unknown> }).spec
}

/** A Go-style edit by another client: clone, change, track the update. */
function edit(live: KubeObject, manager: string, now: string, change: (o: KubeObject) => void, apiVersion = 'apps/v1'): KubeObject {
  const o = structuredClone(live)
  change(o)
  defaultBuiltin(o)
  return trackUpdate(live, o, { manager, topology: DEPLOY, now, apiVersion, resetFields: [['status']] })
}


t.test('create-on-apply: one Apply entry with the server key order and fieldsV1 of the applied config only', async (t) => {
  const cfg = deployment({ replicas: 2 }, [{ name: 'app', image: 'memcached:1.6', ports: [{ containerPort: 11211 }], resources: { limits: { memory: '1024Mi' } } }], { app: 'x' })
  const obj = ok(t, serverSideApply(undefined, cfg, opts('op', T0)))
  const mf = obj.metadata.managedFields ?? []
  t.equal(mf.length, 1)
  t.same(Object.keys(mf[0] as object), ['manager', 'operation', 'apiVersion', 'time', 'fieldsType', 'fieldsV1'])
  t.strictSame(mf[0], {
    manager: 'op',
    operation: 'Apply',
    apiVersion: 'apps/v1',
    time: T0,
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': { 'f:labels': { 'f:app': {} } },
      'f:spec': {
        'f:replicas': {},
        'f:selector': {},
        'f:template': {
          'f:metadata': { 'f:labels': { 'f:app': {} } },
          'f:spec': {
            'f:containers': {
              'k:{"name":"app"}': {
                '.': {},
                'f:image': {},
                'f:name': {},
                'f:ports': { 'k:{"containerPort":11211,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } },
                'f:resources': { 'f:limits': { 'f:memory': {} } },
              },
            },
          },
        },
      },
    },
  })
  // defaulted and canonicalised by the defaulter after the merge
  t.equal(podSpec(obj).containers[0]?.imagePullPolicy, 'IfNotPresent')
  t.same(podSpec(obj).containers[0]?.resources, { limits: { memory: '1Gi' } })
  t.same(podSpec(obj).containers[0]?.ports, [{ containerPort: 11211, protocol: 'TCP' }])
})

t.test('an update on create owns the defaulted fields, with "." where a node appeared with children', async (t) => {
  const cfg = deployment({ replicas: 1 }, [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80 }], resources: { limits: { cpu: '1' } } }])
  defaultBuiltin(cfg)
  const obj = trackUpdate(undefined, cfg, { manager: 'kubectl-client-side-apply', topology: DEPLOY, now: T0, apiVersion: 'apps/v1' })
  t.strictSame(obj.metadata.managedFields, [
    {
      manager: 'kubectl-client-side-apply',
      operation: 'Update',
      apiVersion: 'apps/v1',
      time: T0,
      fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:spec': {
          'f:progressDeadlineSeconds': {},
          'f:replicas': {},
          'f:revisionHistoryLimit': {},
          'f:selector': {},
          'f:strategy': { 'f:rollingUpdate': { '.': {}, 'f:maxSurge': {}, 'f:maxUnavailable': {} }, 'f:type': {} },
          'f:template': {
            'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
            'f:spec': {
              'f:containers': {
                'k:{"name":"app"}': {
                  '.': {},
                  'f:image': {},
                  'f:imagePullPolicy': {},
                  'f:name': {},
                  'f:ports': { '.': {}, 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} } },
                  'f:resources': { '.': {}, 'f:limits': { '.': {}, 'f:cpu': {} } },
                  'f:terminationMessagePath': {},
                  'f:terminationMessagePolicy': {},
                },
              },
              'f:dnsPolicy': {},
              'f:restartPolicy': {},
              'f:schedulerName': {},
              'f:securityContext': {},
              'f:terminationGracePeriodSeconds': {},
            },
          },
        },
      },
    },
  ])
})

t.test('stripped fields are never owned', async (t) => {
  const cfg = deployment()
  Object.assign(cfg.metadata, { uid: 'u1', resourceVersion: '5', generation: 3, creationTimestamp: T0, selfLink: '/x' })
  const obj = ok(t, serverSideApply(undefined, cfg, opts('op', T0)))
  const f = entry(obj, 'op')?.fieldsV1 ?? {}
  t.notOk('f:apiVersion' in f)
  t.notOk('f:kind' in f)
  t.notOk('f:metadata' in f, 'name, namespace, uid, resourceVersion, generation, creationTimestamp, selfLink stripped')
})

t.test('conflicts', async (t) => {
  const base = ok(t, serverSideApply(undefined, deployment({ replicas: 2 }), opts('op', T0)))
  const edited = edit(base, 'kubectl-edit', T1, (o) => {
    spec(o).replicas = 5
    podSpec(o).containers[0]!.image = 'memcached:1.7'
  })
  t.strictSame(entry(edited, 'kubectl-edit')?.fieldsV1, {
    'f:spec': { 'f:replicas': {}, 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { 'f:image': {} } } } } },
  })
  t.strictSame(entry(edited, 'op')?.fieldsV1, {
    'f:spec': { 'f:selector': {}, 'f:template': { 'f:metadata': { 'f:labels': { 'f:app': {} } }, 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:name': {} } } } } },
  }, 'the update took the fields away from the applier')

  const cases: { name: string; cfg: KubeObject; message: string; fields: string[] }[] = [
    {
      name: 'one conflict',
      cfg: deployment({ replicas: 2 }, [{ name: 'app', image: 'memcached:1.7' }]),
      message: 'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas',
      fields: ['.spec.replicas'],
    },
    {
      name: 'two conflicts',
      cfg: deployment({ replicas: 2 }, [{ name: 'app', image: 'memcached:1.6' }]),
      message: 'Apply failed with 2 conflicts: conflicts with "kubectl-edit" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name="app"].image',
      fields: ['.spec.replicas', '.spec.template.spec.containers[name="app"].image'],
    },
  ]
  for (const c of cases) {
    const r = serverSideApply(edited, c.cfg, opts('op', T2))
    t.equal(r.ok, false, c.name)
    if (r.ok) continue
    t.equal(r.message, c.message, c.name)
    t.same(r.conflicts.map((x) => x.field), c.fields, c.name)
    t.same(r.conflicts.map((x) => x.message), c.fields.map(() => 'conflict with "kubectl-edit" using apps/v1'), c.name)
    t.same(r.conflicts.map((x) => [x.manager, x.apiVersion]), c.fields.map(() => ['kubectl-edit', 'apps/v1']), c.name)
  }

  t.test('force transfers ownership', async (t) => {
    const forced = ok(t, serverSideApply(edited, cases[1]!.cfg, opts('op', T2, { force: true })))
    t.equal(spec(forced).replicas, 2)
    t.equal(podSpec(forced).containers[0]?.image, 'memcached:1.6')
    t.equal(entry(forced, 'kubectl-edit'), undefined, 'a manager whose set becomes empty is dropped')
    t.ok(entry(forced, 'op')?.fieldsV1['f:spec'])
  })

  t.test('conflicts with an applier and a status writer print as the server does', async (t) => {
    const applied = ok(t, serverSideApply(base, deployment({ replicas: 3 }), opts('other', T1, { force: true })))
    const r = serverSideApply(applied, deployment({ replicas: 4 }), opts('op', T2))
    t.equal(r.ok, false)
    if (!r.ok) t.equal(r.message, 'Apply failed with 1 conflict: conflict with "other": .spec.replicas')
  })

  t.test('several managers are listed sorted by manager', async (t) => {
    const a = edit(base, 'zeta', T1, (o) => {
      spec(o).replicas = 7
    })
    const b = edit(a, 'alpha', T2, (o) => {
      podSpec(o).containers[0]!.image = 'memcached:9'
    })
    const r = serverSideApply(b, deployment({ replicas: 2 }), opts('op', T3))
    t.equal(r.ok, false)
    if (!r.ok) {
      t.equal(r.message, 'Apply failed with 2 conflicts: conflicts with "alpha" using apps/v1:\n- .spec.template.spec.containers[name="app"].image\nconflicts with "zeta" using apps/v1:\n- .spec.replicas')
    }
  })
})

t.test('two appliers with the same value share ownership; when one drops it the value stays', async (t) => {
  const a = ok(t, serverSideApply(undefined, deployment({ replicas: 3 }), opts('a', T0)))
  const ab = serverSideApply(a, deployment({ replicas: 3 }), opts('b', T1))
  t.equal(ab.ok, true, 'no conflict for an identical value')
  const both = ok(t, ab)
  t.ok(ab.ok && ab.changed, 'ownership-only change is a change')
  t.equal(entry(both, 'b')?.time, T1, 'a new entry gets a time')
  t.equal(entry(both, 'a')?.time, T0)
  t.ok(entry(both, 'a')?.fieldsV1['f:spec'] && entry(both, 'b')?.fieldsV1['f:spec'])
  const dropped = ok(t, serverSideApply(both, deployment(), opts('a', T2)))
  t.equal(spec(dropped).replicas, 3, 'b still owns replicas')
  t.notOk((entry(dropped, 'a')?.fieldsV1['f:spec'] as Record<string, unknown>)['f:replicas'])
})

t.test('pruning', async (t) => {
  const first = ok(t, serverSideApply(undefined, deployment({ replicas: 3, minReadySeconds: 5 }, [{ name: 'app', image: 'm:1' }, { name: 'side', image: 's:1' }], { app: 'x', tier: 'cache' }), opts('op', T0)))
  const foreign = edit(first, 'kubectl-label', T1, (o) => {
    o.metadata.labels = { ...o.metadata.labels, team: 'a' }
  })
  const second = ok(t, serverSideApply(foreign, deployment({}, [{ name: 'app', image: 'm:1' }], { app: 'x' }), opts('op', T2)))
  t.equal(spec(second).minReadySeconds, undefined, 'a field nobody else owns is deleted')
  t.equal(spec(second).replicas, 1, 'a removed defaulted field comes back with its default')
  t.same(podSpec(second).containers.map((c) => c.name), ['app'], 'a list item this manager stopped applying is removed')
  t.same(second.metadata.labels, { app: 'x', team: 'a' }, 'labels of other managers stay')
  const third = ok(t, serverSideApply(second, deployment({}, [{ name: 'app', image: 'm:1' }]), opts('op', T3)))
  t.same(third.metadata.labels, { team: 'a' })
  const fourth = ok(t, serverSideApply(
    trackUpdate(third, { ...structuredClone(third), metadata: { ...structuredClone(third.metadata), labels: {} } }, { manager: 'kubectl-label', topology: DEPLOY, now: T3, apiVersion: 'apps/v1' }),
    deployment({}, [{ name: 'app', image: 'm:1' }]),
    opts('op', T3),
  ))
  t.equal(fourth.metadata.labels, undefined, 'empty labels vanish, as through Go types')
})

t.test('pruning a map that becomes empty removes it', async (t) => {
  const first = ok(t, serverSideApply(undefined, deployment({}, undefined, { a: '1' }), opts('op', T0)))
  const second = ok(t, serverSideApply(first, deployment(), opts('op', T1)))
  t.equal(second.metadata.labels, undefined)
  t.equal(entry(second, 'op')?.fieldsV1['f:metadata'], undefined)
})

t.test('no-op apply: changed false, the live object itself, timestamps untouched', async (t) => {
  const cfg = deployment({ replicas: 2 })
  const first = ok(t, serverSideApply(undefined, cfg, opts('op', T0)))
  const again = serverSideApply(first, structuredClone(cfg), opts('op', T1))
  t.ok(again.ok && !again.changed)
  t.equal(again.ok && again.object, first)
  t.equal(entry(first, 'op')?.time, T0)
  const changed = ok(t, serverSideApply(first, deployment({ replicas: 4 }), opts('op', T2)))
  t.equal(entry(changed, 'op')?.time, T2, 'time moves when something changed')
})

t.test('before-first-apply takes the fields of an object without managedFields', async (t) => {
  const live = deployment({ replicas: 2, minReadySeconds: 3 })
  defaultBuiltin(live)
  const r = serverSideApply(live, deployment({ replicas: 2 }), opts('op', T1))
  const obj = ok(t, r)
  const bfa = entry(obj, 'before-first-apply', 'Update')
  t.ok(bfa)
  t.equal(bfa?.apiVersion, 'apps/v1')
  const bfaSpec = bfa?.fieldsV1['f:spec'] as Record<string, unknown>
  t.ok('f:minReadySeconds' in bfaSpec && 'f:replicas' in bfaSpec, 'before-first-apply owns the existing fields')
  t.equal(obj.metadata.managedFields?.[0]?.manager, 'op', 'Apply entries sort before Update entries')
  const conflicting = serverSideApply(obj, deployment({ replicas: 9 }), opts('late', T2))
  t.equal(conflicting.ok, false, 'shared with before-first-apply: another applier conflicts with both owners')
  if (!conflicting.ok) t.equal(conflicting.message, 'Apply failed with 2 conflicts: conflicts with "before-first-apply" using apps/v1:\n- .spec.replicas\nconflicts with "op":\n- .spec.replicas')
})

t.test('update entries are split by apiVersion, apply entries are not', async (t) => {
  const base = ok(t, serverSideApply(undefined, deployment(), opts('op', T0)))
  const e1 = edit(base, 'editor', T1, (o) => {
    spec(o).replicas = 4
  })
  const e2 = edit(e1, 'editor', T2, (o) => {
    spec(o).minReadySeconds = 4
  }, 'apps/v1beta2')
  const editors = (e2.metadata.managedFields ?? []).filter((e) => e.manager === 'editor').map((e) => [e.apiVersion, e.time])
  t.same(editors, [['apps/v1', T1], ['apps/v1beta2', T2]])
  const reapplied = ok(t, serverSideApply(e2, deployment(), opts('op', T3, { apiVersion: 'apps/v1beta2' })))
  const applies = (reapplied.metadata.managedFields ?? []).filter((e) => e.operation === 'Apply')
  t.same(applies.map((e) => e.apiVersion), ['apps/v1beta2'], 'one Apply entry per manager, at the latest apiVersion')
})

t.test('entries sort by operation, time, manager, apiVersion, subresource', async (t) => {
  const base = ok(t, serverSideApply(undefined, deployment(), opts('zz', T2)))
  const b = ok(t, serverSideApply(base, deployment({ minReadySeconds: 1 }), opts('aa', T3)))
  const c = edit(b, 'mm', T1, (o) => {
    spec(o).paused = true
  })
  const d = edit(c, 'bb', T1, (o) => {
    spec(o).revisionHistoryLimit = 2
  })
  t.same((d.metadata.managedFields ?? []).map((e) => `${e.operation}/${e.manager}`), ['Apply/zz', 'Apply/aa', 'Update/bb', 'Update/mm'])
})

t.test('status subresource: its own entry with subresource "status"; main resource never owns status', async (t) => {
  const base = ok(t, serverSideApply(undefined, { ...deployment(), status: { replicas: 9 } }, opts('op', T0)))
  t.equal(base.status, undefined, 'status in a main-resource apply is reset')
  t.equal(entry(base, 'op')?.fieldsV1['f:status'], undefined)
  const withStatus = structuredClone(base)
  withStatus.status = { replicas: 1, conditions: [{ type: 'Available', status: 'True' }] }
  const st = trackUpdate(base, withStatus, { manager: 'kube-controller-manager', topology: DEPLOY, now: T1, apiVersion: 'apps/v1', subresource: 'status', resetFields: [['spec'], ['metadata', 'labels']] })
  const e = entry(st, 'kube-controller-manager')
  t.equal(e?.subresource, 'status')
  t.same(Object.keys(e ?? {}), ['manager', 'operation', 'apiVersion', 'time', 'fieldsType', 'fieldsV1', 'subresource'])
  t.strictSame(e?.fieldsV1, { 'f:status': { 'f:conditions': { '.': {}, 'k:{"type":"Available"}': { '.': {}, 'f:status': {}, 'f:type': {} } }, 'f:replicas': {} } })
  const applied = ok(t, serverSideApply(st, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: 'default' }, status: { replicas: 2 } }, opts('status-applier', T2, { subresource: 'status', resetFields: [['spec'], ['metadata']], force: true })))
  const se = entry(applied, 'status-applier')
  t.equal(se?.subresource, 'status')
  t.same(applied.status, { replicas: 2, conditions: [{ type: 'Available', status: 'True' }] })
  t.same(applied.spec, base.spec, 'spec is reset on /status')
})

t.test('one Apply entry per (manager, subresource)', async (t) => {
  const base = ok(t, serverSideApply(undefined, deployment({ replicas: 1 }), opts('op', T0)))
  const status = ok(t, serverSideApply(base, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: 'default' }, status: { replicas: 1 } }, opts('op', T1, { subresource: 'status', resetFields: [['spec'], ['metadata']] })))
  t.same((status.metadata.managedFields ?? []).map((e) => [e.manager, e.operation, e.subresource]), [['op', 'Apply', undefined], ['op', 'Apply', 'status']])
  const again = ok(t, serverSideApply(status, deployment({ replicas: 2 }), opts('op', T2)))
  t.equal((again.metadata.managedFields ?? []).length, 2, 'the main-resource entry is updated, not duplicated')
  t.same((again.metadata.managedFields ?? []).map((e) => [e.subresource, e.time]), [['status', T1], [undefined, T2]])
})

t.test('removing every container an applier owned leaves no empty list behind', async (t) => {
  const base = ok(t, serverSideApply(undefined, deployment({}, [{ name: 'a', image: 'a' }]), opts('op', T0)))
  const other = ok(t, serverSideApply(base, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: 'default' }, spec: { replicas: 1 } }, opts('op', T1)))
  t.equal(podSpec(other).containers, undefined)
  // The template is a struct field nobody owns anything below any more: prune removes it whole
  // (merge/update.go, EnsureNamedFieldsAreMembers); it comes back as its zero value, defaulted.
  t.same(spec(other).template, { spec: { dnsPolicy: 'ClusterFirst', restartPolicy: 'Always', securityContext: {}, terminationGracePeriodSeconds: 30, schedulerName: 'default-scheduler' } })
})

// structured-merge-diff's visitListItems: a live-only item is emitted when the walk over the live
// list reaches it, between the config items around it.
t.test('merged list order: config order, live-only items keep their relative place', async (t) => {
  const c = (names: string[]): Container[] => names.map((name) => ({ name, image: name }))
  const cases: { live: string[]; foreign: string[]; cfg: string[]; want: string[] }[] = [
    { live: ['a', 'b', 'c'], foreign: [], cfg: ['c', 'b', 'a'], want: ['c', 'b', 'a'] },
    { live: ['a', 'b'], foreign: ['x'], cfg: ['b', 'a', 'd'], want: ['b', 'x', 'a', 'd'] },
    { live: ['a'], foreign: ['x', 'y'], cfg: ['a', 'n'], want: ['a', 'x', 'y', 'n'] },
  ]
  for (const tc of cases) {
    const first = ok(t, serverSideApply(undefined, deployment({}, c(tc.live)), opts('op', T0)))
    const withForeign = edit(first, 'other', T1, (o) => {
      podSpec(o).containers.push(...c(tc.foreign))
    })
    const merged = ok(t, serverSideApply(withForeign, deployment({}, c(tc.cfg)), opts('op', T2)))
    t.same(podSpec(merged).containers.map((x) => x.name), tc.want, `${tc.live} + ${tc.foreign} ← ${tc.cfg}`)
  }
})

t.test('list-map items without key fields take the key defaults', async (t) => {
  const live = ok(t, serverSideApply(undefined, deployment({}, [{ name: 'app', image: 'm', ports: [{ containerPort: 80, protocol: 'TCP', name: 'http' }] }]), opts('a', T0)))
  const r = ok(t, serverSideApply(live, deployment({}, [{ name: 'app', image: 'm', ports: [{ containerPort: 80, name: 'http' }] }]), opts('a', T1)))
  t.same(podSpec(r).containers[0]?.ports, [{ containerPort: 80, protocol: 'TCP', name: 'http' }], 'same item: the key default matches TCP')
})

t.test('invalid configurations throw ApplyTypeError with the server message', async (t) => {
  const cases = [
    {
      cfg: deployment({}, [{ name: 'app', image: 'a' }, { name: 'app', image: 'b' }]),
      message: 'failed to create typed patch object (apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name="app"]',
    },
    {
      cfg: deployment({}, [{ name: 'app', image: 'a', ports: [{ containerPort: 1 }, { containerPort: 1, protocol: 'TCP' }] }]),
      message: 'failed to create typed patch object (apps/v1, Kind=Deployment): .spec.template.spec.containers[name="app"].ports: duplicate entries for key [containerPort=1,protocol="TCP"]',
    },
    {
      cfg: deployment({}, [{ image: 'a' } as unknown as Container]),
      message: 'failed to create typed patch object (apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits all key fields ["name"] (and doesn\'t have default values for any key fields)',
    },
  ]
  for (const c of cases) {
    t.throws(() => serverSideApply(undefined, c.cfg, opts('op', T0)), { name: 'ApplyTypeError', message: c.message, status: 500 })
  }
  const err = (() => {
    try {
      serverSideApply(undefined, cases[0]!.cfg, opts('op', T0))
    } catch (e) {
      return e
    }
    return undefined
  })()
  t.ok(err instanceof ApplyTypeError)
})

t.test('trackUpdate: sets, removals, time only when the writer changed something', async (t) => {
  const base = ok(t, serverSideApply(undefined, deployment({ replicas: 2, minReadySeconds: 1 }), opts('op', T0)))
  const removed = edit(base, 'ed', T1, (o) => {
    delete spec(o).minReadySeconds
  })
  t.equal(entry(removed, 'ed'), undefined, 'only removals: the writer gets no entry')
  t.notOk('f:minReadySeconds' in (entry(removed, 'op')?.fieldsV1['f:spec'] as object), 'removed fields leave every owner')
  const same = edit(removed, 'op2', T2, () => {})
  t.same(same.metadata.managedFields, removed.metadata.managedFields, 'an identical write changes no ownership')
  const e1 = edit(removed, 'ed', T2, (o) => {
    spec(o).paused = true
  })
  const e2 = edit(e1, 'ed', T3, (o) => {
    delete spec(o).paused
    spec(o).minReadySeconds = 9
  })
  t.same(entry(e2, 'ed')?.fieldsV1, { 'f:spec': { 'f:minReadySeconds': {} } })
  t.equal(entry(e2, 'ed')?.time, T3)
  const e3 = edit(e2, 'ed', '2026-01-01T09:00:00Z', (o) => {
    delete spec(o).minReadySeconds
    spec(o).paused = true
  })
  t.equal(entry(e3, 'ed')?.time, '2026-01-01T09:00:00Z')
})

t.test('trackUpdate: managedFields sent by the client replace the stored ones; [{}] clears them', async (t) => {
  const base = ok(t, serverSideApply(undefined, deployment({ replicas: 2 }), opts('op', T0)))
  const cleared = structuredClone(base)
  cleared.metadata.managedFields = [{} as ManagedFieldsEntry]
  const out = trackUpdate(base, cleared, { manager: 'kubectl', topology: DEPLOY, now: T1, apiVersion: 'apps/v1' })
  t.equal(out.metadata.managedFields, undefined)
  const kept = structuredClone(base)
  spec(kept).replicas = 3
  kept.metadata.managedFields = []
  const out2 = trackUpdate(base, kept, { manager: 'kubectl', topology: DEPLOY, now: T1, apiVersion: 'apps/v1' })
  t.same((out2.metadata.managedFields ?? []).map((e) => e.manager), ['op', 'kubectl'], 'an empty list keeps the stored ones')
})

t.test('apply to an object that another manager created by update conflicts on changed values only', async (t) => {
  const created = structuredClone(deployment({ replicas: 2 }))
  defaultBuiltin(created)
  const live = trackUpdate(undefined, created, { manager: 'kubectl-create', topology: DEPLOY, now: T0, apiVersion: 'apps/v1' })
  const same = serverSideApply(live, deployment({ replicas: 2 }), opts('op', T1))
  t.ok(same.ok && same.changed, 'identical values: shared ownership, no conflict')
  const diff = serverSideApply(live, deployment({ replicas: 3 }), opts('op', T1))
  t.equal(diff.ok, false)
})

t.test('applying without a field it owned alone resets a defaulted field, ownership follows', async (t) => {
  const first = ok(t, serverSideApply(undefined, deployment({ strategy: { type: 'Recreate' } }), opts('op', T0)))
  t.same(spec(first).strategy, { type: 'Recreate' })
  const second = ok(t, serverSideApply(first, deployment(), opts('op', T1)))
  t.same(spec(second).strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } })
})

t.test('ownerReferences are keyed by uid with atomic items; finalizers are a set', async (t) => {
  const cfg = deployment()
  cfg.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: 'u-1', controller: true }]
  cfg.metadata.finalizers = ['a/b']
  const obj = ok(t, serverSideApply(undefined, cfg, opts('op', T0)))
  t.strictSame(entry(obj, 'op')?.fieldsV1['f:metadata'], {
    'f:finalizers': { 'v:"a/b"': {} },
    'f:ownerReferences': { 'k:{"uid":"u-1"}': {} },
  })
})

t.test('null in a configuration removes the field and owns it', async (t) => {
  const first = ok(t, serverSideApply(undefined, deployment({ minReadySeconds: 3 }), opts('op', T0)))
  const second = ok(t, serverSideApply(first, deployment({ minReadySeconds: null }), opts('op', T1)))
  t.equal(spec(second).minReadySeconds, undefined)
})

t.test('typed/merge.go: null on a granular struct or map leaves its content; on an atomic one it removes it', async (t) => {
  const first = ok(t, serverSideApply(undefined, deployment({ strategy: { rollingUpdate: { maxSurge: 2 } } }, undefined, { a: '1' }), opts('op', T0)))
  const cfg = deployment({ strategy: null, selector: null })
  cfg.metadata.labels = null as never
  const second = ok(t, serverSideApply(first, cfg, opts('other', T1)))
  t.same(second.metadata.labels, { a: '1' }, 'labels (granular map) unchanged')
  t.same((spec(second).strategy as Record<string, any>).rollingUpdate.maxSurge, 2, 'strategy (granular struct) unchanged')
  t.equal(spec(second).selector, undefined, 'selector (atomic) removed')
  const f = entry(second, 'other')?.fieldsV1 as Record<string, any>
  t.same([f['f:metadata'], f['f:spec']['f:strategy'], f['f:spec']['f:selector']], [{ 'f:labels': {} }, {}, {}], 'the applier owns each null')
})

t.test('property: re-applying the same configuration is a no-op, and every applied value is in the result', async (t) => {
  const fc = (await import('fast-check')).default
  const name = fc.constantFrom('a', 'b', 'c', 'd')
  const containerArb = fc.record({
    name,
    image: fc.constantFrom('m:1', 'm:2', 'm'),
    env: fc.uniqueArray(fc.record({ name: fc.constantFrom('X', 'Y', 'Z'), value: fc.string({ maxLength: 3 }) }), { selector: (e) => e.name, maxLength: 3 }),
    ports: fc.uniqueArray(fc.record({ containerPort: fc.integer({ min: 1, max: 4 }) }), { selector: (p) => p.containerPort, maxLength: 2 }),
    resources: fc.record({ limits: fc.record({ cpu: fc.constantFrom('0.5', '1', '1000m', '250m') }) }),
  })
  const cfgArb = fc.record({
    replicas: fc.integer({ min: 0, max: 5 }),
    labels: fc.dictionary(fc.constantFrom('l1', 'l2', 'l3'), fc.constantFrom('v1', 'v2')),
    containers: fc.uniqueArray(containerArb, { selector: (c) => c.name, minLength: 1, maxLength: 3 }),
  })
  fc.assert(
    fc.property(cfgArb, cfgArb, (c1, c2) => {
      const mk = (c: typeof c1): KubeObject => deployment({ replicas: c.replicas }, c.containers, c.labels)
      const first = ok(t, serverSideApply(undefined, mk(c1), opts('op', T0)))
      const second = ok(t, serverSideApply(first, mk(c2), opts('op', T1)))
      const again = serverSideApply(second, mk(c2), opts('op', T2))
      if (!again.ok || again.changed || again.object !== second) return false
      if (spec(second).replicas !== c2.replicas) return false
      const got = podSpec(second).containers
      if (got.map((c) => c.name).join() !== c2.containers.map((c) => c.name).join()) return false
      for (const want of c2.containers) {
        const have = got.find((c) => c.name === want.name)
        if (have?.image !== want.image) return false
        const env = (have.env ?? []) as { name: string; value: string }[]
        if (env.map((e) => `${e.name}=${e.value}`).join() !== want.env.map((e) => `${e.name}=${e.value}`).join()) return false
        if (((have.ports ?? []) as unknown[]).length !== want.ports.length) return false
      }
      return deepEqual(second.metadata.labels ?? {}, c2.labels)
    }),
    { numRuns: 300 },
  )
})

t.test('built-in kinds lose empty lists and maps as through Go types; custom resources keep them', async (t) => {
  const cfg = deployment({}, [{ name: 'app', image: 'm', env: [], args: [], volumeMounts: [{ name: 'v', mountPath: '/v' }] }], {})
  ;(podSpec(cfg) as Record<string, unknown>).volumes = [{ name: 'v', emptyDir: {} }]
  ;(podSpec(cfg) as Record<string, unknown>).nodeSelector = {}
  const obj = ok(t, serverSideApply(undefined, cfg, opts('op', T0)))
  const c = podSpec(obj).containers[0] as Record<string, unknown>
  t.equal(c.env, undefined)
  t.equal(c.args, undefined)
  t.equal(obj.metadata.labels, undefined)
  t.equal(podSpec(obj).nodeSelector, undefined)
  t.same(podSpec(obj).volumes, [{ name: 'v', emptyDir: {} }], 'empty structs stay')
  t.same(c.resources, {}, 'resources: {} stays')
  const noContainers = deployment({}, [])
  omitEmpty(noContainers as never, DEPLOY)
  t.same(podSpec(noContainers).containers, [], 'containers is not omitempty')
  const cr = { apiVersion: 'x/v1', kind: 'X', metadata: { name: 'x' }, spec: { list: [], map: {} } }
  omitEmpty(cr as never, { type: 'struct', fields: {} })
  t.same(cr.spec, { list: [], map: {} })
})

t.test('a "." in the last applied set does not prune children that are still applied', async (t) => {
  // The shape kubectl leaves after migrating client-side apply to server-side apply: the Apply
  // entry carries the Update set of the create, with "." on the label maps.
  const migrated: ManagedFieldsEntry = {
    manager: 'kubectl',
    operation: 'Apply',
    apiVersion: 'apps/v1',
    time: T0,
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': { 'f:labels': { '.': {}, 'f:a': {}, 'f:b': {} } },
      'f:spec': {
        'f:selector': {},
        'f:template': { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } }, 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } },
      },
    },
  }
  const live = deployment({}, undefined, { a: '1', b: '2' })
  defaultBuiltin(live)
  live.metadata.managedFields = [migrated]
  const cfg = deployment({}, undefined, { a: '1' })
  const r = ok(t, serverSideApply(live, cfg, opts('kubectl', T1)))
  t.same(r.metadata.labels, { a: '1' }, 'the still-applied label stays; the one applied last time only is pruned')
  t.same(spec(r).selector, { matchLabels: { app: 'x' } }, 'selector kept')
  t.same((spec(r).template as KubeObject).metadata.labels, { app: 'x' }, 'template labels kept')
  t.same(entry(r, 'kubectl')?.fieldsV1['f:metadata'], { 'f:labels': { 'f:a': {} } }, 'the applier keeps the label, not the map')

  // A child that nobody applied (it is not in the last applied set) is not the applier's to prune.
  const dangling = deployment({}, undefined, { a: '1', z: '9' })
  defaultBuiltin(dangling)
  dangling.metadata.managedFields = [migrated]
  t.same(ok(t, serverSideApply(dangling, cfg, opts('kubectl', T1))).metadata.labels, { a: '1', z: '9' })
})

t.test('typed/reconcile_schema.go: once a field becomes atomic, whoever owned fields below it owns the field', async (t) => {
  const granular = customResourceTopology({ type: 'struct', fields: { spec: { type: 'struct', fields: { opts: { type: 'struct', fields: {} } } } } })
  const atomic = customResourceTopology({ type: 'struct', fields: { spec: { type: 'struct', fields: { opts: { type: 'struct', fields: {}, atomic: true } } } } })
  const cr = (opts: Record<string, unknown>): KubeObject => ({ apiVersion: 'x/v1', kind: 'X', metadata: { name: 'x' }, spec: { opts } })
  const o = (manager: string, topology: typeof granular, now: string): ApplyOptions => ({ manager, force: false, topology, now, apiVersion: 'x/v1' })
  const first = ok(t, serverSideApply(undefined, cr({ a: 1 }), o('one', granular, T0)))
  const second = ok(t, serverSideApply(first, cr({ a: 1, b: 2 }), o('two', granular, T1)))
  t.same(entry(second, 'one')?.fieldsV1, { 'f:spec': { 'f:opts': { 'f:a': {} } } })
  // The schema changes (a CRD update): the next write sees both managers owning spec.opts.
  const r = serverSideApply(second, cr({ a: 3 }), o('one', atomic, T2))
  t.equal(r.ok, false)
  if (!r.ok) t.same(r.conflicts.map((c) => `${c.manager} ${c.field}`), ['two .spec.opts'])
  const forced = ok(t, serverSideApply(second, cr({ a: 3 }), { ...o('one', atomic, T2), force: true }))
  t.same(spec(forced).opts, { a: 3 })
  t.same(entry(forced, 'one')?.fieldsV1, { 'f:spec': { 'f:opts': {} } })
  t.notOk(entry(forced, 'two'))
})

t.test('a preserved-unknown field that turns from a map into a string takes its members out of their owner (typed/compare.go)', async (t) => {
  const cr = customResourceTopology({ type: 'struct', fields: { spec: { type: 'struct', fields: {}, preserveUnknown: true } } })
  const object = (extra: unknown): KubeObject => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec: { extra } }) as unknown as KubeObject
  const opts = (manager: string, now: string): ApplyOptions => ({ manager, force: true, topology: cr, now, apiVersion: 'example.com/v1' })
  const a = serverSideApply(undefined, object({ b: 1 }), opts('a', T0))
  if (!a.ok) throw new Error(a.message)
  // b takes spec.extra from a (a conflict, forced) and the change removes spec.extra.b.
  const b = serverSideApply(a.object, object('s'), opts('b', T1))
  if (!b.ok) throw new Error(b.message)
  t.same(b.object.spec, { extra: 's' })
  const owners = Object.fromEntries((b.object.metadata.managedFields ?? []).map((e) => [e.manager, e.fieldsV1]))
  t.same(owners, { b: { 'f:spec': { 'f:extra': {} } } }, 'a kept nothing: spec.extra went to b, spec.extra.b is gone')
})

t.test('typed/merge.go: a null applied over a preserved-unknown map leaves its entries and their owner; over a list or a scalar there it replaces the value', async (t) => {
  // Below a preserved-unknown field the type is `__untyped_deduced_` (typed/parser.go): maps
  // separable, lists atomic. A null's atom is the whole deduced atom, whose map part handleAtom
  // picks (typed/helpers.go); doMap keeps a live map's entries and makes a list or scalar a leaf
  // that the null replaces (a change, so a conflict with its owner).
  const cr = customResourceTopology({ type: 'struct', fields: { spec: { type: 'struct', fields: {}, preserveUnknown: true } } })
  const object = (extra: unknown): KubeObject => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec: { extra } }) as unknown as KubeObject
  const opts = (manager: string, now: string, force: boolean): ApplyOptions => ({ manager, force, topology: cr, now, apiVersion: 'example.com/v1' })
  const a = serverSideApply(undefined, object({ m: { k: 1 }, l: [1], s: 'x' }), opts('a', T0, false))
  if (!a.ok) throw new Error(a.message)
  const refused = serverSideApply(a.object, object({ m: null, l: null, s: null }), opts('b', T1, false))
  t.same(refused.ok ? [] : refused.conflicts.map((c) => c.field).sort(), ['.spec.extra.l', '.spec.extra.s'], 'the list and the scalar change; the map does not')
  const b = serverSideApply(a.object, object({ m: null, l: null, s: null }), opts('b', T1, true))
  if (!b.ok) throw new Error(b.message)
  t.same(b.object.spec, { extra: { m: { k: 1 }, l: null, s: null } })
  const owners = Object.fromEntries((b.object.metadata.managedFields ?? []).map((e) => [e.manager, e.fieldsV1]))
  t.same(owners, {
    a: { 'f:spec': { 'f:extra': { '.': {}, 'f:m': { '.': {}, 'f:k': {} } } } },
    b: { 'f:spec': { 'f:extra': { '.': {}, 'f:l': {}, 'f:m': {}, 'f:s': {} } } },
  }, 'a keeps the map and its entry, shared with b; the list and the scalar went to b (spec.extra, undeclared, is a member of both: typed/tofieldset.go)')
})

t.test('a null applied over an object field the applier filled leaves the field null once its members are pruned (typed/remove.go)', async (t) => {
  const cr = customResourceTopology({ type: 'struct', fields: { spec: { type: 'struct', fields: { opts: { type: 'struct', fields: { a: { type: 'scalar' } } } } } } })
  const object = (opts: unknown): KubeObject => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec: { opts } }) as unknown as KubeObject
  const o: ApplyOptions = { manager: 'a', force: false, topology: cr, now: T0, apiVersion: 'example.com/v1' }
  const first = serverSideApply(undefined, object({ a: 'x' }), o)
  if (!first.ok) throw new Error(first.message)
  const second = serverSideApply(first.object, object(null), { ...o, now: T1 })
  if (!second.ok) throw new Error(second.message)
  t.same(second.object.spec, { opts: null }, 'a custom resource keeps the null (its CRD drops it unless the field is nullable)')
  t.same(second.object.metadata.managedFields?.[0]?.fieldsV1, { 'f:spec': { 'f:opts': {} } })
})
