//! A record read back (`llmload report`, `compare`, `plan`, `merge`, `reconcile`) checked
//! before any figure is made of it: a record llmload wrote holds finite, non-negative times in
//! their order, so one that does not was edited or damaged, and is named rather than counted.

use super::Record;
use crate::num::{plausible, MAX_MS};

/// How far a later mark may read before an earlier one, s: the marks come from one clock, but
/// a kernel's receive stamp and the send's time are taken apart.
const SLACK_S: f64 = 1e-3;

impl Record {
    /// Whether this record's values can be a measurement: every time finite, not negative and
    /// plausible ([`plausible`]), its first token and its end not before its send, its TTFT not
    /// after its end. Else what is impossible, in words.
    pub fn check(&self) -> Result<(), String> {
        let max_s = MAX_MS / 1e3;
        plausible("its sent_s", self.sent_s, max_s)?;
        for (what, value) in [
            ("scheduled_s", self.scheduled_s),
            ("first_token_s", self.first_token_s),
            ("done_s", self.done_s),
        ] {
            if let Some(value) = value {
                plausible(&format!("its {what}"), value, max_s)?;
            }
        }
        for (what, value) in [
            ("ttft_ms", self.ttft_ms),
            ("e2e_ms", self.e2e_ms),
            ("answer_ms", self.answer_ms),
        ] {
            if let Some(value) = value {
                plausible(&format!("its {what}"), value, MAX_MS)?;
            }
        }
        for value in &self.event_ms {
            plausible("one of its event_ms", *value, MAX_MS)?;
        }
        for (what, at) in [
            ("first_token_s", self.first_token_s),
            ("done_s", self.done_s),
        ] {
            if let Some(at) = at.filter(|at| *at < self.sent_s - SLACK_S) {
                return Err(format!(
                    "its {what} {at} is before its sent_s {} (it would end before it was sent): \
                     edited or damaged, no figure is made of it",
                    self.sent_s
                ));
            }
        }
        if let (Some(ttft), Some(e2e)) = (self.ttft_ms, self.e2e_ms) {
            if ttft > e2e + SLACK_S * 1e3 {
                return Err(format!(
                    "its ttft_ms {ttft} is after its e2e_ms {e2e}: edited or damaged, no figure \
                     is made of it"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::record::ok_record;

    #[test]
    fn impossible_records_are_named_and_a_real_one_passes() {
        type Edit = fn(&mut crate::record::Record);
        let real = ok_record(5.0, Some(4.9), vec![10.0, 20.0, 30.0]);
        assert_eq!(real.check(), Ok(()));
        let edits: [(&str, Edit); 5] = [
            ("negative", |r| r.ttft_ms = Some(-3.0)),
            ("past anything", |r| r.e2e_ms = Some(1e300)),
            ("before its sent_s", |r| {
                r.done_s = r.done_s.map(|_| r.sent_s - 2.0);
            }),
            ("after its e2e_ms", |r| {
                r.ttft_ms = r.e2e_ms.map(|e| e * 3.0);
            }),
            ("event_ms", |r| r.event_ms.push(f64::NAN)),
        ];
        for (says, edit) in edits {
            let mut record = real.clone();
            edit(&mut record);
            let error = record.check().expect_err(says);
            assert!(error.contains(says), "{says}: {error}");
        }
    }
}
