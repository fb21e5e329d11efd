//! wrap: a wasi-command tool written in Rust with the standard library only
//! (Debian's rustc and its wasm32-wasi target; no crates).
//! Reads {"text": "...", "width": N} on stdin and writes
//! {"lines": [...], "count": N}: the words of text greedily wrapped so that
//! no line is longer than width characters (a longer word stands alone).
use std::io::Read;

/// Reads the JSON string that starts at s (just after its opening quote).
fn json_string(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' | 't' | 'r' => out.push(' '),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?).unwrap_or(' '));
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

fn quote(s: &str) -> String {
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if (c as u32) < 0x20 => q.push_str(&format!("\\u{:04x}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

fn fail(msg: &str) -> ! {
    println!("{{\"error\":{{\"code\":\"BAD_INPUT\",\"message\":{}}}}}", quote(msg));
    std::process::exit(1)
}

fn main() {
    let mut input = String::new();
    if std::io::stdin().read_to_string(&mut input).is_err() {
        fail("stdin is not UTF-8");
    }
    let text = input
        .find("\"text\":\"")
        .and_then(|i| json_string(&input[i + 8..]))
        .unwrap_or_else(|| fail("want {\"text\": string, \"width\": integer}"));
    let width: usize = input
        .find("\"width\":")
        .map(|i| input[i + 8..].chars().take_while(|c| c.is_ascii_digit()).collect::<String>())
        .and_then(|d| d.parse().ok())
        .unwrap_or(60);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    let body: Vec<String> = lines.iter().map(|l| quote(l)).collect();
    println!("{{\"lines\":[{}],\"count\":{}}}", body.join(","), lines.len());
}
