// vowels: an Extism plugin written in AssemblyScript with the Extism
// AssemblyScript PDK. The host hands it the call's arguments as compact
// JSON ({"text": "..."}) and reads its output as the result:
// {"vowels": N, "letters": N}, counting the ASCII vowels and letters of text.
import { Host } from "@extism/as-pdk";

export function myAbort(message: string | null, fileName: string | null, lineNumber: u32, columnNumber: u32): void {}

function isVowel(c: i32): bool {
  c = c | 0x20; // lower case for ASCII letters
  return c == 0x61 || c == 0x65 || c == 0x69 || c == 0x6f || c == 0x75;
}

export function call(): i32 {
  const input = Host.inputString();
  const key = '"text":"';
  const start = input.indexOf(key);
  if (start < 0) {
    Host.outputString('{"error":"want {\\"text\\": string}"}');
    return 1;
  }
  let vowels = 0;
  let letters = 0;
  for (let i = start + key.length; i < input.length; i++) {
    const c = input.charCodeAt(i);
    if (c == 0x22) break; // the closing quote
    if (c == 0x5c) { // an escape: skip what it escapes
      i += input.charCodeAt(i + 1) == 0x75 ? 5 : 1;
      continue;
    }
    if ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) {
      letters++;
      if (isVowel(c)) vowels++;
    }
  }
  Host.outputString('{"vowels":' + vowels.toString() + ',"letters":' + letters.toString() + "}");
  return 0;
}
