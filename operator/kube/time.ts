/** Times as the API writes them (metav1.Time). */

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
