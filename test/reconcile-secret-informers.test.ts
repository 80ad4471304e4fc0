/**
 * The Secret cache kept per namespace (operator/reconcile/secret-informers.ts): an informer made
 * for a namespace when a reconcile there first needs one, waited for until it syncs or is refused,
 * and, with fixed namespaces (`run --namespace`), made up front and never elsewhere.
 */
import t from 'tap'
import type { Informer } from '../operator/controller/informer.ts'
import { SecretInformers } from '../operator/reconcile/secret-informers.ts'
import type { SecretSummary } from '../operator/reconcile/secrets.ts'

/** An informer stand-in whose list the test completes (sync) by hand. */
class FakeInformer {
  started = false
  stopped = false
  synced = false
  items: SecretSummary[] = []
  #waiters: ((ok: boolean) => void)[] = []
  readonly namespace: string
  constructor(namespace: string) {
    this.namespace = namespace
  }
  start(): void {
    this.started = true
  }
  stop(): void {
    this.stopped = true
  }
  sync(items: SecretSummary[]): void {
    this.items = items
    this.synced = true
    for (const w of this.#waiters.splice(0)) w(true)
  }
  hasSynced(): boolean {
    return this.synced
  }
  waitForSync(): Promise<boolean> {
    return this.synced ? Promise.resolve(true) : new Promise((resolve) => this.#waiters.push(resolve))
  }
  get(namespace: string | undefined, name: string): SecretSummary | undefined {
    return this.items.find((s) => s.metadata.namespace === namespace && s.metadata.name === name)
  }
  list(): SecretSummary[] {
    return this.items
  }
}

const secret = (namespace: string, name: string): SecretSummary => ({ apiVersion: 'v1', kind: 'Secret', metadata: { namespace, name }, checksum: 'c', keys: ['k'] })

function setUp(namespaces: string[] = []) {
  const made: FakeInformer[] = []
  const handed: FakeInformer[] = []
  const cache = new SecretInformers({
    namespaces,
    make: (ns) => {
      const i = new FakeInformer(ns)
      made.push(i)
      return i as unknown as Informer<SecretSummary>
    },
    onInformer: (i) => handed.push(i as unknown as FakeInformer),
  })
  return { cache, made, handed }
}

t.test('on demand: nothing is listed until a namespace is prepared; prepare waits for its informer to sync', async (t) => {
  const { cache, made, handed } = setUp()
  cache.start()
  t.same(made, [], 'no informer at start')
  t.ok(cache.hasSynced(), 'nothing to wait for at start')
  t.notOk(cache.ready('team'), 'a namespace without an informer is not ready')
  let prepared = false
  const p = cache.prepare('team').then(() => (prepared = true))
  t.same(made.map((i) => [i.namespace, i.started]), [['team', true]], 'made and started at once')
  t.same(handed, made, 'handed to the controller for its event handlers')
  await new Promise((r) => setImmediate(r))
  t.notOk(prepared, 'still waiting for the list')
  made[0]!.sync([secret('team', 'tls')])
  await p
  t.ok(cache.ready('team'))
  t.equal(cache.get('team', 'tls')?.checksum, 'c')
  t.equal(cache.get(undefined, 'tls'), undefined)
  t.same(cache.list().map((s) => s.metadata.name), ['tls'])
  await cache.prepare('team')
  t.equal(made.length, 1, 'one informer per namespace')
  cache.stop()
  t.ok(made[0]!.stopped)
  await cache.prepare('other')
  t.equal(made.length, 1, 'nothing is made once stopped')
})

t.test('a refused informer ends the wait and says why, until it syncs (a RoleBinding created later)', async (t) => {
  const { cache, made } = setUp()
  cache.start()
  const p = cache.prepare('team-b')
  const other = cache.prepare('team-c')
  cache.failed('team-b', Object.assign(new Error('secrets is forbidden: User "x" cannot list resource "secrets"'), { status: 403 }))
  cache.failed('team-b', Object.assign(new Error('a reset connection'), { status: 0 }))
  await p
  t.match(cache.forbidden('team-b'), /forbidden/)
  t.ok(cache.ready('team-b'), 'as ready as it will be: the render reports the Secrets as unreadable')
  t.equal(cache.forbidden('team-c'), undefined, 'another namespace is not refused')
  made.find((i) => i.namespace === 'team-b')!.sync([secret('team-b', 'auth')])
  t.equal(cache.forbidden('team-b'), undefined, 'synced after all')
  made.find((i) => i.namespace === 'team-c')!.sync([])
  await other
})

t.test('fixed namespaces: their informers are made up front and start with the controller; other namespaces need nothing', async (t) => {
  const { cache, made } = setUp(['memcached'])
  t.same(made.map((i) => [i.namespace, i.started]), [['memcached', false]])
  t.notOk(cache.hasSynced())
  cache.start()
  t.ok(made[0]!.started)
  t.ok(cache.ready('elsewhere'), 'a namespace not served has nothing to wait for')
  await cache.prepare('elsewhere')
  t.equal(made.length, 1)
  made[0]!.sync([])
  t.ok(cache.hasSynced())
  t.same(cache.byIndex(), [])
})
