/** Times as the API writes them (metav1.Time) and durations as Go writes them (metav1.Duration). */

let memoSecond = -1
let memoText = ''

/** RFC 3339 with seconds, as metav1.Time serialises; the current time's text is reused within a second. */
export function rfc3339(d?: Date): string {
  if (d) return d.toISOString().replace(/\.\d{3}Z$/, 'Z')
  const second = Math.floor(Date.now() / 1000)
  if (second !== memoSecond) {
    memoSecond = second
    memoText = new Date(second * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')
  }
  return memoText
}

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** A Go duration (`10m`, `1h30m`, `500ms`) in milliseconds (Go's time.ParseDuration, without signs). @throws Error naming the text */
export function goDuration(text: string): number {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)]
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw new Error(`invalid duration ${JSON.stringify(text)} (use e.g. 30s, 10m, 1h30m)`)
  return parts.reduce((ms, p) => ms + Number(p[1]) * UNITS[p[2]!]!, 0)
}
