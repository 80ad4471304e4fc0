/**
 * The fleet's damage budget (budget.ts), without a server: charges per window, all or nothing,
 * each charged once; what a change would delete and restart; a render that drops most of a CR's
 * objects refused unless its annotation allows it for the CR's generation.
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'
import { ALLOW_MASS_PRUNE_ANNOTATION, budgetMessage, DamageBudget, deleteCharge, massPruneRefusal, planDamage, type Damage } from '../operator/reconcile/budget.ts'
import { objectKey } from '../operator/reconcile/owner.ts'
import { RecreationPacer } from '../operator/reconcile/pacing.ts'
import { runCli } from '../operator/cli/program.ts'
import { budgetLimits } from '../operator/cli/run.ts'
import { captureIO } from './support/io.ts'

const del = (uid: string): Damage => ({ kind: 'delete', key: `delete:${uid}`, what: `Deployment default/${uid}` })
const restart = (uid: string): Damage => ({ kind: 'restart', key: `restart:${uid}:h`, what: `Deployment default/${uid}` })

t.test('a budget admits changes until a kind is spent, all or nothing, then again once the window moved past the first charges', async (t) => {
  let now = 0
  const seen: { delete: number; restart: number }[] = []
  const b = new DamageBudget({ deletes: 2, restarts: 1, windowMs: 60_000, now: () => now, onChange: (u) => seen.push(u) })
  t.same(b.admit([del('a')]), { admitted: true })
  now = 10_000
  const refused = b.admit([del('b'), del('c'), restart('d')])
  t.same(refused, { admitted: false, kind: 'delete', need: 2, used: 1, limit: 2, retryAfterMs: 50_000 }, 'two more deletes do not fit: none is charged, and room comes when the first charge leaves the window')
  t.equal(b.used('restart'), 0, 'the restart of the refused change was not charged either')
  t.same(b.admit([del('a'), del('b'), restart('d')]), { admitted: true }, 'a delete already charged is free')
  t.equal(b.used('delete'), 2)
  t.match(b.admit([restart('e')]), { admitted: false, kind: 'restart', limit: 1 })
  now = 60_000
  t.equal(b.used('delete'), 1, 'the first charge left the window')
  t.same(b.admit([del('c')]), { admitted: true })
  t.same(seen.at(-1), { delete: 2, restart: 1 }, 'the gauges follow the charges')
})

t.test('a budget of 0 is no limit; a negative or fractional one is refused', async (t) => {
  const b = new DamageBudget({ deletes: 0, restarts: 0, windowMs: 1000 })
  t.same(b.admit(Array.from({ length: 1000 }, (_, i) => del(String(i)))), { admitted: true })
  t.throws(() => new DamageBudget({ deletes: -1, restarts: 0, windowMs: 1000 }), /deletes budget must be a non-negative integer/)
  t.throws(() => new DamageBudget({ deletes: 1, restarts: 1.5, windowMs: 1000 }), /restarts budget/)
  t.throws(() => new DamageBudget({ deletes: 1, restarts: 1, windowMs: 0 }), /window must be positive/)
})

t.test('the waiting message names the objects, the budget and its flag', async (t) => {
  const msg = budgetMessage([del('a'), restart('b')], { admitted: false, kind: 'restart', need: 1, used: 50, limit: 50, retryAfterMs: 1500 })
  t.equal(msg, "the change would restart the pods of Deployment default/b and the fleet's budget of pod restarts is spent (50 of 50 in the window, --max-restarts); nothing of this Memcached is applied until the window has room")
})

const deployment = (name: string, image: string, selector = 'memcached'): RenderedObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'default' },
  spec: { replicas: 1, selector: { matchLabels: { app: selector } }, template: { metadata: { labels: { app: selector } }, spec: { containers: [{ name: 'memcached', image }] } } },
})
const service = (name: string): RenderedObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { ports: [{ port: 11211 }] } })
const liveOf = (d: RenderedObject, uid: string, extra: Record<string, unknown> = {}): KubeObject => ({ ...structuredClone(d), metadata: { ...d.metadata, uid }, ...extra }) as KubeObject

t.test('a change is priced: prunes and re-creations delete, a new pod template restarts, unchanged objects cost nothing', async (t) => {
  const desired = [deployment('restarted', 'memcached:1.6.39'), deployment('recreated', 'memcached:1.6.38', 'cache'), deployment('same', 'memcached:1.6.38'), service('svc')]
  const live = new Map<string, KubeObject | undefined>([
    [objectKey(desired[0]!), liveOf(deployment('restarted', 'memcached:1.6.38'), 'u1')],
    [objectKey(desired[1]!), liveOf(deployment('recreated', 'memcached:1.6.38'), 'u2')],
    [objectKey(desired[2]!), liveOf(desired[2]!, 'u3')],
    [objectKey(desired[3]!), liveOf(service('svc'), 'u4', { spec: { ports: [{ port: 11211 }], clusterIP: 'None' } })],
  ])
  const pdb = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'gone', namespace: 'default' } }
  const controlled = [...desired.map((d) => ({ identity: d, object: live.get(objectKey(d))! })), { identity: pdb, object: { ...pdb, metadata: { ...pdb.metadata, uid: 'u5' } } as KubeObject }]
  const plan = planDamage(desired, live, controlled, (d) => d.metadata.name === 'same')
  t.same(plan.pruned, ['PodDisruptionBudget default/gone'])
  t.equal(plan.controlled, 5)
  t.same(plan.damage.map((d) => [d.kind, d.what]), [
    ['delete', 'PodDisruptionBudget default/gone'],
    ['restart', 'Deployment default/restarted'],
    ['delete', 'Deployment default/recreated'],
    ['delete', 'Service default/svc'],
  ], 'the headless Service whose render drops the cluster IP is re-created: a delete')
  t.match(plan.damage[1]!.key, /^restart:u1:[0-9a-f]+$/, 'a restart is charged per workload and pod template')
  t.equal(deleteCharge({ metadata: { uid: 'u9' } }, 'x').key, 'delete:u9')
})

t.test('a render that prunes more than the fraction is refused, unless the annotation names the CR\'s generation', async (t) => {
  const plan = { damage: [], pruned: ['Service default/a', 'PodDisruptionBudget default/a'], controlled: 3 }
  const cr = (annotations?: Record<string, string>) => ({ metadata: { generation: 4, ...(annotations ? { annotations } : {}) } })
  t.match(massPruneRefusal(plan, cr(), 0.5), /^the render would prune 2 of the 3 objects this Memcached controls \(Service default\/a, PodDisruptionBudget default\/a\), more than 50% \(--max-prune-fraction\): refused, nothing applied; to allow it once, annotate the Memcached memcached\.cache\.example\.com\/allow-mass-prune=<its metadata\.generation, 4>$/)
  t.equal(massPruneRefusal(plan, cr({ [ALLOW_MASS_PRUNE_ANNOTATION]: '4' }), 0.5), undefined, 'allowed for this generation')
  t.type(massPruneRefusal(plan, cr({ [ALLOW_MASS_PRUNE_ANNOTATION]: '3' }), 0.5), 'string', 'an allowance for an older generation does not count')
  t.equal(massPruneRefusal(plan, cr(), 1), undefined, 'a fraction of 1 never refuses')
  t.equal(massPruneRefusal({ damage: [], pruned: ['PodDisruptionBudget default/a'], controlled: 3 }, cr(), 0.5), undefined, 'one of three is not most')
  t.type(massPruneRefusal({ damage: [], pruned: ['Deployment default/a'], controlled: 1 }, cr(), 0.5), 'string', 'an empty render of a CR with one object is refused')
})

t.test('run: the budget flags are checked, each error names its flag (exit 2); their defaults', async (t) => {
  for (const [args, message] of [
    [['--max-deletes', '-1'], /--max-deletes must be a non-negative integer \(0: no limit\), not "-1"/],
    [['--max-restarts', 'many'], /--max-restarts must be a non-negative integer/],
    [['--budget-window', '0s'], /--budget-window must be a positive duration/],
    [['--budget-window', 'ten'], /invalid duration "ten"/],
    [['--max-prune-fraction', '1.5'], /--max-prune-fraction must be a number from 0 to 1 \(1: no limit\), not "1\.5"/],
  ] as const) {
    const io = captureIO()
    t.equal(await runCli(['run', ...args, '--kubeconfig', '/dev/null'], io), 2, args.join(' '))
    t.match(io.err(), message)
  }
  t.same(budgetLimits({}), { deletes: 20, restarts: 50, windowMs: 600_000 })
  t.same(budgetLimits({ maxDeletes: '0', maxRestarts: '7', budgetWindow: '1h' }), { deletes: 0, restarts: 7, windowMs: 3_600_000 })
})

t.test('a workload re-creation is paced by the same budget: its slot is granted only with a delete of room, and it keeps its place in the queue meanwhile', async (t) => {
  let now = 0
  const budget = new DamageBudget({ deletes: 1, restarts: 0, windowMs: 60_000, now: () => now })
  const pacer = new RecreationPacer({ max: 0, timeoutMs: 3_600_000, now: () => now, budget })
  const req = (name: string) => ({ key: `Deployment.apps/default/${name}`, owner: name, crKey: `default/${name}`, what: `Deployment default/${name}`, field: 'spec.selector', replaces: `uid-${name}`, ref: deployment(name, 'x') })
  t.same(pacer.request(req('a')), { granted: true })
  const refused = pacer.request(req('b'))
  t.match(refused, { granted: false, position: 1, queued: 1, inFlight: ['Deployment default/a'], budget: { kind: 'delete', used: 1, limit: 1, retryAfterMs: 60_000 } })
  t.match(pacer.request(req('c')), { granted: false, position: 2, budget: { kind: 'delete' } }, 'behind b in the queue, and no room for it either')
  t.equal(budget.used('delete'), 1, 'nothing charged for b or c')
  t.same(pacer.request(req('a')), { granted: true }, 'a workload already in flight is not charged again')
  now = 60_000
  const behind = pacer.request(req('c'))
  t.match(behind, { granted: false, position: 2 }, 'c may not pass b once the window has room')
  t.notOk('budget' in behind, 'it waits for its turn, not for the budget')
  t.same(pacer.request(req('b')), { granted: true }, 'b, first in line, gets the delete')
  t.equal(budget.used('delete'), 1)
})
