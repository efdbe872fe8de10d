//! The words of a command printed for people to paste (a resume command,
//! a hint): shell quoting, and how a queue is named so that the pasted
//! command reaches the same queue. A leaf: `exit`, `output` and `session`
//! all print commands.

/// Whether a value is a queue id by its form: Cloudflare's ids are 32
/// lowercase hex digits. A queue name can be too (names are lowercase
/// letters, digits and dashes); `--queue-name` reads it as one. Upper case
/// is not an id's shape: such a value is looked up as a name, and when no
/// queue has it the error names the queue whose id it is in lower case.
pub fn looks_like_id(value: &str) -> bool {
    value.len() == 32
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Words as one command line for a POSIX shell: a word with anything but
/// letters, digits and `-_./:=@%+,` is single-quoted, so that a printed
/// command can be pasted as it is (paths with spaces, quotes, `$`).
pub fn command_line(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
    quoted.join(" ")
}

fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The flag family a printed command names a queue with.
#[derive(Debug, Clone, Copy)]
pub enum QueueFlag {
    /// `--queue`, `--queue-id`, `--queue-name`.
    Queue,
    /// `--to`, `--to-id`, `--to-name`.
    To,
}

impl QueueFlag {
    /// The flag as such, by id, and by name.
    fn spellings(self) -> [&'static str; 3] {
        match self {
            QueueFlag::Queue => ["--queue", "--queue-id", "--queue-name"],
            QueueFlag::To => ["--to", "--to-id", "--to-name"],
        }
    }
}

/// The words that name a queue in a printed command, so that pasting it
/// reaches the same queue: an id of 32 lowercase hex digits as itself, any other id
/// with `--queue-id` (as a plain `--queue` value it would be looked up as
/// a name first, and another queue may have it).
pub fn queue_id_words(flag: QueueFlag, id: &str) -> Vec<String> {
    let [plain, by_id, _] = flag.spellings();
    let name = if looks_like_id(id) { plain } else { by_id };
    vec![name.to_owned(), id.to_owned()]
}

/// The words that name a queue in a hint meant for people: its name when
/// known (what they typed), else its id as [`queue_id_words`] does. A name
/// that looks like an id is given with `--queue-name`.
pub fn queue_words(flag: QueueFlag, name: Option<&str>, id: &str) -> Vec<String> {
    match name {
        Some(name) => {
            let [plain, _, by_name] = flag.spellings();
            let flag = if looks_like_id(name) { by_name } else { plain };
            vec![flag.to_owned(), name.to_owned()]
        }
        None => queue_id_words(flag, id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_by_their_form() {
        assert!(looks_like_id("9a7806061c88ada191ed06f989cc3dac"));
        assert!(!looks_like_id("9A7806061C88ADA191ED06F989CC3DAC"));
        assert!(!looks_like_id("9a7806061c88ada191ed06f989cc3da"));
        assert!(!looks_like_id("9a7806061c88ada191ed06f989cc3dag"));
        assert!(!looks_like_id("orders"));
        assert_eq!(
            queue_id_words(QueueFlag::To, "jobs"),
            ["--to-id".to_owned(), "jobs".to_owned()]
        );
        assert_eq!(
            queue_words(QueueFlag::Queue, Some("orders"), "x"),
            ["--queue".to_owned(), "orders".to_owned()]
        );
    }

    #[test]
    fn command_lines_are_quoted_for_the_shell() {
        let words: Vec<String> = [
            "cfq",
            "--file",
            "/tmp/it's here/a b.ndjson",
            "--delay",
            "1s 500ms",
            "",
            "$HOME",
            "http://127.0.0.1:8787/client/v4",
        ]
        .iter()
        .map(|w| (*w).to_owned())
        .collect();
        assert_eq!(
            command_line(&words),
            r"cfq --file '/tmp/it'\''s here/a b.ndjson' --delay '1s 500ms' '' '$HOME' http://127.0.0.1:8787/client/v4"
        );
    }
}
