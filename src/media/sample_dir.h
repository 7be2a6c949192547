/*
 * Sample output directories that are complete or absent.
 *
 * A sample's outputs (frames, MP4, metadata) are written into
 * "<path>.tmp.<pid>" beside the final path; commit renames it to <path> in
 * one step.  A crash, a failed write or an abort leaves nothing at <path>,
 * so a later run (or a person) can trust any sample directory it finds.
 *
 *   svp_media_sample_dir_h dir;
 *   svp_media_sample_dir_begin("out/sample_0003", &dir);
 *   ... write files under svp_media_sample_dir_path(dir) ...
 *   status = ok ? svp_media_sample_dir_commit(dir)
 *               : (svp_media_sample_dir_abort(dir), status);
 *
 * Ownership: begin allocates the handle; commit and abort both free it,
 * whatever their outcome.
 */
#ifndef SVP_MEDIA_SAMPLE_DIR_H
#define SVP_MEDIA_SAMPLE_DIR_H

#include "media/video.h"

typedef struct svp_media_sample_dir *svp_media_sample_dir_h;

/* Creates the temporary directory (and the parents of path).  A leftover
 * temporary of this same pid is removed first. */
svp_status_t svp_media_sample_dir_begin(const char             *path,
                                        svp_media_sample_dir_h *dir_p);

/* The directory to write into; valid until commit or abort. */
const char *svp_media_sample_dir_path(svp_media_sample_dir_h dir);

/*
 * fsyncs the temporary directory and renames it to the final path.  An
 * existing directory at the final path (an earlier run of the same
 * sample) is replaced: it is moved aside, the new one renamed in, the old
 * one deleted.  On failure the temporary is removed and whatever was at the
 * final path before is put back.
 */
svp_status_t svp_media_sample_dir_commit(svp_media_sample_dir_h dir);

/* Removes the temporary directory and everything in it. */
void svp_media_sample_dir_abort(svp_media_sample_dir_h dir);

/* Name of the video inside a sample directory. */
#define SVP_MEDIA_SAMPLE_VIDEO "video.mp4"

/*
 * Writes one sample whole: frame_0000.png ... and, when video is not NULL,
 * video.mp4 encoded with those parameters, into a sample directory that is
 * committed at path only when everything was written.
 */
svp_status_t svp_media_sample_write(const char                     *path,
                                    const svp_media_frames_t       *frames,
                                    const svp_media_video_params_t *video);

#endif
