//! Results per archetype: how the subjects of each behaviour the data names scored, so a
//! model is judged on every kind of client, not on an average the common kinds dominate.

use super::samples::{Sample, Samples};

/// How one archetype's held-out subjects scored.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchetypeResult {
    pub archetype: String,
    pub abuse: bool,
    pub subjects: usize,
    /// Subjects with a sample at or over the threshold.
    pub flagged: usize,
    pub samples: usize,
    pub samples_flagged: usize,
}

/// Groups held-out samples by their subject's archetype.
pub fn by_archetype(
    samples: &Samples,
    rows: &[&Sample],
    scores: &[f64],
    threshold: f64,
) -> Vec<ArchetypeResult> {
    let mut results: Vec<ArchetypeResult> = Vec::new();
    let mut flagged_subjects = hashbrown::HashMap::<u32, bool>::new();
    for (sample, score) in rows.iter().zip(scores) {
        let subject = &samples.subjects[sample.subject as usize];
        let Some(name) = &subject.archetype else {
            continue;
        };
        let index = match results.iter().position(|r| &r.archetype == name) {
            Some(i) => i,
            None => {
                results.push(ArchetypeResult {
                    archetype: name.clone(),
                    abuse: subject.abuse,
                    subjects: 0,
                    flagged: 0,
                    samples: 0,
                    samples_flagged: 0,
                });
                results.len() - 1
            }
        };
        let hit = *score >= threshold;
        let row = &mut results[index];
        row.samples += 1;
        row.samples_flagged += usize::from(hit);
        match flagged_subjects.get_mut(&sample.subject) {
            None => {
                flagged_subjects.insert(sample.subject, hit);
                row.subjects += 1;
                row.flagged += usize::from(hit);
            }
            Some(flagged) if hit && !*flagged => {
                *flagged = true;
                row.flagged += 1;
            }
            Some(_) => {}
        }
    }
    results.sort_by(|a, b| (a.abuse, &a.archetype).cmp(&(b.abuse, &b.archetype)));
    results
}
