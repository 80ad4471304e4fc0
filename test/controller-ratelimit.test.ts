/**
 * Rate limits as client-go and controller-runtime have them: a client-side token bucket before
 * every request (flowcontrol.NewTokenBucketRateLimiter over golang.org/x/time/rate; `run`'s
 * --kube-api-qps/--kube-api-burst, off by default as in controller-runtime since v0.21), and under rate-limited
 * requeues the larger of the per-key backoff and a 10 qps / 100 burst bucket
 * (workqueue.DefaultTypedControllerRateLimiter).
 */
import pino from 'pino'
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { FakeClock } from '../operator/controller/clock.ts'
import { WorkQueue } from '../operator/controller/queue.ts'
import { RateLimitError, TokenBucket } from '../operator/controller/ratelimit.ts'
import { runCli } from '../operator/cli/program.ts'
import { DEFAULT_KUBE_API_BURST, DEFAULT_KUBE_API_QPS, StartAborted, startOperator } from '../operator/cli/run.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { captureIO } from './support/io.ts'
import { eventually, runOptions as base } from './support/operator.ts'

t.test('a token bucket lets `burst` pass at once, then one per 1/qps', async (t) => {
  const clock = new FakeClock()
  const b = new TokenBucket({ qps: 20, burst: 3, clock })
  t.same([b.reserve(), b.reserve(), b.reserve()], [0, 0, 0], 'the burst')
  t.equal(b.reserve(), 50, 'the next token is due in 1/20 s')
  t.equal(b.reserve(), 100, 'and the one after it 1/20 s later')
  clock.advance(100)
  t.equal(b.reserve(), 50, 'refilled at qps: the two reserved tokens are paid, one more is due')
  clock.advance(10_000)
  t.same([b.reserve(), b.reserve(), b.reserve(), b.reserve()], [0, 0, 0, 50], 'never more than burst after a quiet spell')
})

t.test('wait() waits for the reserved token, and an aborted wait gives it back', async (t) => {
  const clock = new FakeClock()
  const b = new TokenBucket({ qps: 1, burst: 1, clock })
  t.equal(await b.wait(), 0)
  let waited: number | undefined
  const w = b.wait().then((ms) => (waited = ms))
  clock.advance(999)
  await new Promise((r) => setImmediate(r))
  t.equal(waited, undefined, 'not before its token is due')
  clock.advance(1)
  await w
  t.equal(waited, 1000)
  const ac = new AbortController()
  const aborted = b.wait(ac.signal)
  ac.abort()
  await t.rejects(aborted, /aborted/)
  t.equal(clock.pending, 0, 'its timer is cleared')
  clock.advance(1000)
  t.equal(b.reserve(), 0, 'the aborted wait\'s token was given back')
  await t.rejects(b.wait(AbortSignal.abort(new Error('lease lost'))), /lease lost/, 'an aborted signal rejects at once, with its reason')
  t.throws(() => new TokenBucket({ qps: 0, burst: 1 }), new RateLimitError('rate limit qps must be a positive number, not 0'))
  t.throws(() => new TokenBucket({ qps: 1, burst: 0.5 }), new RateLimitError('rate limit burst must be a positive integer, not 0.5'))
})

t.test('rate-limited requeues share a 10 qps / 100 burst bucket beside the per-key backoff', async (t) => {
  const clock = new FakeClock(1_000)
  const q = new WorkQueue({ clock, random: () => 0 })
  const delays = Array.from({ length: 150 }, (_, i) => q.addRateLimited(`k${i}`))
  t.same(new Set(delays.slice(0, 100)), new Set([5]), 'the first 100 keys: their own backoff (5 ms)')
  t.equal(delays[100], 100, 'the 101st waits for the bucket: 1/10 s')
  t.equal(delays[149], 5_000, 'the 150th: 50 tokens at 10 per second')
  // A key that has failed often waits its own (longer) backoff.
  const solo = new WorkQueue({ clock, random: () => 0 })
  for (let i = 0; i < 14; i++) solo.addRateLimited('x')
  t.equal(solo.addRateLimited('x'), 5 * 2 ** 14)
  t.equal(new WorkQueue({ clock, random: () => 0, rateLimiter: { qps: 1, burst: 1 } }).addRateLimited('a', { minDelayMs: 7_000 }), 7_000, 'Retry-After is still the floor')
})

t.test('run: --kube-api-qps and --kube-api-burst are checked (exit 2)', async (t) => {
  t.equal(DEFAULT_KUBE_API_QPS, -1, 'no client-side limit unless asked, as controller-runtime since v0.21')
  t.equal(DEFAULT_KUBE_API_BURST, 30)
  for (const args of [
    ['--kube-api-qps', '0'],
    ['--kube-api-qps', 'fast'],
    ['--kube-api-qps', 'Infinity'],
    ['--kube-api-burst', '0'],
    ['--kube-api-burst', '2.5'],
  ]) {
    const io = captureIO()
    t.equal(await runCli(['run', ...args, '--kubeconfig', '/dev/null'], io), 2, `${args.join(' ')}: ${io.err()}`)
    t.match(io.err(), new RegExp(args[0]!))
  }
})

t.test('run: the operator\'s requests go through its token bucket', async (t) => {
  const sandbox = await startSandbox({ installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const ac = new AbortController()
  // A burst of 4 and one more token in about 17 minutes: the start-up requests (discovery, lists) stop at 4.
  const starting = startOperator({ ...base(sandbox.kubeconfigPath), kubeApiQps: '0.001', kubeApiBurst: '4' }, captureIO(), pino({ level: 'silent' }), undefined, ac.signal)
  const sent = (): number => sandbox.requests.log().filter((r) => r.userAgent?.startsWith('memcached-operator/') && r.verb !== 'watch').length
  await eventually('the burst spent', () => (sent() >= 4 ? true : undefined))
  await new Promise((r) => setTimeout(r, 300))
  t.equal(sent(), 4, 'nothing more than the burst was sent')
  ac.abort()
  await t.rejects(starting, StartAborted)
  // A negative rate is no limit (client-go's reading of a negative QPS): the same start syncs.
  const op = await startOperator({ ...base(sandbox.kubeconfigPath), kubeApiQps: '-1', kubeApiBurst: '1' }, captureIO(), pino({ level: 'silent' }))
  await op.stop()
  t.ok(sent() > 8, 'the whole start-up went out')
})
