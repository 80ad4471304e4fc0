/**
 * The stuck-worker and leadership metrics under client-go's and controller-runtime's names and
 * labels: workqueue_unfinished_work_seconds / workqueue_longest_running_processor_seconds{name}
 * (client-go util/workqueue), controller_runtime_active_workers /
 * controller_runtime_max_concurrent_reconciles{controller} (controller-runtime
 * pkg/internal/controller/metrics), leader_election_master_status{name} (client-go
 * tools/leaderelection).
 */
import t from 'tap'
import { FakeClock } from '../operator/controller/clock.ts'
import { createMetrics } from '../operator/controller/metrics.ts'
import { createRuntimeMetrics } from '../operator/controller/metrics-runtime.ts'
import { WorkQueue } from '../operator/controller/queue.ts'
import { controllerMetrics } from '../operator/reconcile/controller-metrics.ts'

const lines = async (m: ReturnType<typeof createMetrics>) => (await m.registry.metrics()).split('\n')

t.test('unfinished work: the sum and the longest of the keys in flight, read at each scrape', async (t) => {
  const m = createMetrics({ defaultMetrics: false })
  const runtime = createRuntimeMetrics(m.registry)
  const clock = new FakeClock(1_000)
  const q = new WorkQueue({ name: 'memcached', clock })
  runtime.watchQueue('memcached', q)
  let text = await lines(m)
  t.ok(text.includes('workqueue_unfinished_work_seconds{name="memcached"} 0'))
  t.ok(text.includes('workqueue_longest_running_processor_seconds{name="memcached"} 0'))
  q.add('a')
  q.add('b')
  const a = await q.get()
  clock.advance(3_000)
  const b = await q.get()
  clock.advance(1_500)
  text = await lines(m)
  t.ok(text.includes('workqueue_unfinished_work_seconds{name="memcached"} 6'), '4.5 s + 1.5 s')
  t.ok(text.includes('workqueue_longest_running_processor_seconds{name="memcached"} 4.5'))
  q.done(a!)
  q.done(b!)
  text = await lines(m)
  t.ok(text.includes('workqueue_unfinished_work_seconds{name="memcached"} 0'), 'nothing in flight')
  t.ok(text.includes('# TYPE workqueue_unfinished_work_seconds gauge'))
})

t.test('active workers and the concurrency through controllerMetrics; the leader gauge', async (t) => {
  const m = createMetrics({ defaultMetrics: false })
  const runtime = createRuntimeMetrics(m.registry)
  const cm = controllerMetrics(m, runtime)
  t.ok((await lines(m)).includes('controller_runtime_active_workers{controller="memcached"} 0'), 'exported before any reconcile')
  cm.maxConcurrent?.(4)
  cm.activeWorkers?.(1)
  cm.activeWorkers?.(1)
  cm.activeWorkers?.(-1)
  let text = await lines(m)
  t.ok(text.includes('controller_runtime_active_workers{controller="memcached"} 1'))
  t.ok(text.includes('controller_runtime_max_concurrent_reconciles{controller="memcached"} 4'))
  runtime.setLeading('memcached-operator-leader', false)
  t.ok((await lines(m)).includes('leader_election_master_status{name="memcached-operator-leader"} 0'))
  runtime.setLeading('memcached-operator-leader', true)
  text = await lines(m)
  t.ok(text.includes('leader_election_master_status{name="memcached-operator-leader"} 1'))
  cm.unchanged?.('Deployment')
  t.ok((await lines(m)).includes('memcached_operator_unchanged_applies_total{kind="Deployment"} 1'))
  t.same(controllerMetrics(createMetrics({ defaultMetrics: false })).activeWorkers, undefined, 'without the runtime metrics, none of theirs')
})
