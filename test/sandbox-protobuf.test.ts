/**
 * The protobuf decoder on hand-encoded bodies: the kinds and fields it knows, and a clear refusal
 * of everything else.
 */
import t from 'tap'
import { decodeProtobuf, ProtobufError } from '../operator/sandbox/protobuf.ts'

/** A minimal protobuf encoder for the tests: fields are [number, value] pairs. */
type Value = string | number | boolean | Uint8Array | Fields
type Fields = [number, Value][]

function varint(n: bigint): number[] {
  const out: number[] = []
  let v = BigInt.asUintN(64, n)
  do {
    let b = Number(v & 0x7fn)
    v >>= 7n
    if (v > 0n) b |= 0x80
    out.push(b)
  } while (v > 0n)
  return out
}

function encode(fields: Fields): Uint8Array {
  const out: number[] = []
  for (const [num, value] of fields) {
    if (typeof value === 'number' || typeof value === 'boolean') {
      out.push(...varint(BigInt(num << 3)), ...varint(BigInt(typeof value === 'boolean' ? Number(value) : value)))
      continue
    }
    const bytes = typeof value === 'string' ? new TextEncoder().encode(value) : value instanceof Uint8Array ? value : encode(value)
    out.push(...varint(BigInt((num << 3) | 2)), ...varint(BigInt(bytes.length)), ...bytes)
  }
  return Uint8Array.from(out)
}

function envelope(apiVersion: string, kind: string, raw: Fields | Uint8Array, extra: Fields = []): Uint8Array {
  const body = encode([[1, [[1, apiVersion], [2, kind]]], [2, raw instanceof Uint8Array ? raw : encode(raw)], ...extra])
  return Uint8Array.from([0x6b, 0x38, 0x73, 0x00, ...body])
}

t.test('a Pod with the fields kubectl run fills in, zero values dropped, pointers kept', async (t) => {
  const pod = envelope('v1', 'Pod', [
    [1, [[1, 'p'], [2, ''], [7, 0], [8, []], [9, [[1, 1_700_000_000]]], [10, 0], [11, [[1, 'a'], [2, 'b']]], [13, [[1, 'ReplicaSet'], [3, 'rs'], [4, 'u'], [5, 'apps/v1'], [6, true], [7, false]]], [14, 'f/x']]],
    [
      2,
      [
        [2, [[1, 'c'], [2, 'img'], [3, 'sh'], [4, '-c'], [6, [[3, 80], [4, 'TCP'], [2, 0]]], [7, [[1, 'A'], [2, 'B']]], [8, [[1, [[1, 'cpu'], [2, [[1, '500m']]]]]]], [16, false]]],
        [3, 'Always'],
        [4, 0],
        [11, false],
        [15, [[1, 'pull']]],
        [21, false],
      ],
    ],
    [3, [[1, 'Pending'], [17, 0]]],
  ])
  t.same(decodeProtobuf(pod), {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'p',
      deletionTimestamp: '2023-11-14T22:13:20Z',
      deletionGracePeriodSeconds: 0,
      labels: { a: 'b' },
      ownerReferences: [{ kind: 'ReplicaSet', name: 'rs', uid: 'u', apiVersion: 'apps/v1', controller: true, blockOwnerDeletion: false }],
      finalizers: ['f/x'],
    },
    spec: {
      containers: [{ name: 'c', image: 'img', command: ['sh'], args: ['-c'], ports: [{ containerPort: 80, protocol: 'TCP' }], env: [{ name: 'A', value: 'B' }], resources: { limits: { cpu: '500m' } } }],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 0,
      imagePullSecrets: [{ name: 'pull' }],
      automountServiceAccountToken: false,
    },
    status: { phase: 'Pending' },
  })
})

t.test('Deployments: int-or-string, selectors, strategies', async (t) => {
  const d = envelope('apps/v1', 'Deployment', [
    [1, [[1, 'd']]],
    [
      2,
      [
        [2, [[2, [[1, 'app'], [2, 'In'], [3, 'x']]]]],
        [4, [[1, 'RollingUpdate'], [2, [[1, [[1, 1], [3, '25%']]], [2, [[1, 0], [2, 1]]]]]]],
        [6, 3],
      ],
    ],
  ])
  t.same(decodeProtobuf(d), {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd' },
    spec: { selector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['x'] }] }, strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: 1 } }, revisionHistoryLimit: 3 },
  })
  const secret = envelope('v1', 'Secret', [[1, [[1, 's']]], [2, [[1, 'k'], [2, new Uint8Array([0, 255])]]], [3, ''], [5, true]])
  t.same(decodeProtobuf(secret), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { k: 'AP8=' }, immutable: true })
})

t.test("typed clients' DeleteOptions", async (t) => {
  const body = envelope('meta.k8s.io/v1', 'DeleteOptions', [[1, 0], [2, [[1, 'u']]], [4, 'Foreground'], [5, 'All']])
  t.same(decodeProtobuf(body), { apiVersion: 'meta.k8s.io/v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: 'u' }, propagationPolicy: 'Foreground', dryRun: ['All'] })
})

t.test('everything else is refused, never dropped', async (t) => {
  const refuse = (body: Uint8Array, why: RegExp): void => {
    t.throws(() => decodeProtobuf(body), { name: 'ProtobufError', message: why })
  }
  refuse(Uint8Array.from([1, 2, 3, 4, 5]), /prefix/)
  refuse(envelope('v1', 'Pod', [[1, [[16, 'x']]]]), /ObjectMeta field 16 is not supported/)
  refuse(envelope('apps/v1', 'StatefulSet', []), /apps\/v1, Kind=StatefulSet is not supported/)
  refuse(envelope('v1', 'Pod', [], [[3, 'gzip']]), /content encoding gzip/)
  refuse(envelope('v1', 'Pod', Uint8Array.from([0x0a, 0x05, 0x0a])), /truncated field/)
  refuse(envelope('v1', 'Pod', Uint8Array.from([0x0a, 0x01, 0x80])), /truncated varint/)
  refuse(envelope('v1', 'Pod', Uint8Array.from([0x0a, 0x0b, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])), /varint too long/)
  refuse(envelope('v1', 'Pod', [[1, [[7, 'not a number']]]]), /expected a varint/)
  refuse(envelope('v1', 'Pod', [[1, [[1, 5]]]]), /expected bytes/)
  refuse(envelope('v1', 'Pod', [[1, 5]]), /expected a message/)
  refuse(envelope('v1', 'ConfigMap', [[4, 'yes']]), /expected a varint/)
  refuse(envelope('v1', 'Secret', [[2, [[1, 'k'], [2, 7]]]]), /expected bytes/)
  // Unknown fields inside a map entry are skipped, as protobuf maps allow.
  const cm = envelope('v1', 'ConfigMap', [[2, [[1, 'k'], [2, 'v'], [3, 9]]]])
  t.same(decodeProtobuf(cm), { apiVersion: 'v1', kind: 'ConfigMap', metadata: {}, data: { k: 'v' } })
  t.ok(new ProtobufError('x') instanceof Error)
})
