/**
 * Which failures a reconcile reports on the CR (transient.ts): definite refusals at once,
 * throttling and shedding never, other transient failures once they have lasted.
 */
import t from 'tap'
import { ApiError } from '../operator/controller/client.ts'
import { SUSTAINED_FAILURE_MS, TransientFailures, transientReason } from '../operator/reconcile/transient.ts'

const api = (status: number, reason = '', retryAfter?: number): ApiError => new ApiError(status, reason, 'm', undefined, retryAfter)

t.test('failures are classified as client-go and the API server mean them', async (t) => {
  t.equal(transientReason(api(429, 'TooManyRequests', 1)), 'Throttled')
  t.equal(transientReason(api(429, 'TooManyRequests')), 'Throttled', 'a 429 is throttling with or without Retry-After')
  t.equal(transientReason(api(503, 'ServiceUnavailable', 1)), 'Throttled', 'a 5xx with Retry-After is shedding')
  t.equal(transientReason(api(500, 'InternalError')), 'ServerError')
  t.equal(transientReason(api(504, 'Timeout')), 'ServerError')
  t.equal(transientReason(api(409, 'Conflict')), 'Conflict')
  for (const [status, reason] of [[409, 'AlreadyExists'], [422, 'Invalid'], [403, 'Forbidden'], [404, 'NotFound'], [400, 'BadRequest']] as const) t.equal(transientReason(api(status, reason)), undefined, `${status} ${reason} is definite`)
  t.equal(transientReason(new Error('delete to re-create (x): boom', { cause: api(429, 'TooManyRequests', 1) })), 'Throttled', 'through a cause')
  t.equal(transientReason(Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' })), 'Unreachable')
  t.equal(transientReason(new Error('PATCH /apis/apps/v1/namespaces/d/deployments/x: no answer within 30000 ms')), 'Unreachable')
  t.equal(transientReason(new Error('GET /x: connection closed before the answer was complete')), 'Unreachable')
  t.equal(transientReason(new Error('no resource known for Widget in example.com/v1')), undefined, 'an error of the operator\'s own is definite')
  t.equal(transientReason(undefined), undefined)
})

t.test('a run of transient failures is reported once it has lasted; throttling never', async (t) => {
  let now = 1_000_000
  const f = new TransientFailures(() => now)
  t.equal(f.sustainedMs, SUSTAINED_FAILURE_MS)
  t.equal(SUSTAINED_FAILURE_MS, 300_000)
  t.same(f.judge('a', api(500)), { report: false, reason: 'ServerError', failingForMs: 0 })
  now += SUSTAINED_FAILURE_MS - 1
  t.same(f.judge('a', api(500)), { report: false, reason: 'ServerError', failingForMs: SUSTAINED_FAILURE_MS - 1 })
  t.same(f.judge('b', api(500)), { report: false, reason: 'ServerError', failingForMs: 0 }, 'each CR has its own run')
  now += 1
  t.same(f.judge('a', api(500)), { report: true }, 'lasted: reported')
  t.same(f.judge('a', api(429, '', 1)), { report: false, reason: 'Throttled', failingForMs: SUSTAINED_FAILURE_MS }, 'throttling is never reported')
  t.same(f.judge('a', api(422, 'Invalid')), { report: true }, 'a definite refusal is reported at once')
  f.clear('a')
  t.same(f.judge('a', api(500)), { report: false, reason: 'ServerError', failingForMs: 0 }, 'a completed reconcile ends the run')
  const zero = new TransientFailures(() => now, 0)
  t.same(zero.judge(undefined, api(500)), { report: true })
})

t.test('an applied configuration of the wrong types (500 from the field manager) is a definite refusal, reported at once', async (t) => {
  const err = new ApiError(500, '', 'failed to create typed patch object (default/x; /v1, Kind=ConfigMap): .data.size: expected string, got &value.valueUnstructured{Value:1}')
  t.equal(transientReason(err), undefined)
  t.equal(transientReason(new ApiError(500, 'InternalError', 'etcdserver: request timed out')), 'ServerError', 'another 500 is still transient')
})
