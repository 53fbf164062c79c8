! TorchFort's reinforcement-learning interface (torchfort_rl_*, v0.4.0 and master's load_model calls), for the
! module `torchfort`, which re-exports it: the generic names, arguments and kinds of TorchFort's, so that a program
! that calls them builds and links. The off-policy systems ktr has (TD3, DDPG, SAC: create_system,
! update_replay_buffer for one or n_envs environments, is_ready, train_step, predict, predict_explore, evaluate,
! save_checkpoint, load_checkpoint, load_model, wandb_log)
! run through TorchFort's C calls (torchfort_rl.cpp; the arrays' descriptors go through fortran.c), real32 or
! real64; every other call answers TORCHFORT_RESULT_NOT_SUPPORTED, printing why to stderr (KTR_QUIET=1 silences
! it), and touches no argument.
module ktr_torchfort_rl
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  implicit none
  private

  public :: torchfort_rl_off_policy_create_system, torchfort_rl_off_policy_create_distributed_system, &
            torchfort_rl_off_policy_wandb_log, torchfort_rl_off_policy_update_replay_buffer, &
            torchfort_rl_off_policy_train_step, torchfort_rl_off_policy_predict_explore, &
            torchfort_rl_off_policy_predict, torchfort_rl_off_policy_evaluate, &
            torchfort_rl_off_policy_save_checkpoint, torchfort_rl_off_policy_load_checkpoint, &
            torchfort_rl_off_policy_load_model, torchfort_rl_off_policy_is_ready, &
            torchfort_rl_on_policy_create_system, torchfort_rl_on_policy_create_distributed_system, &
            torchfort_rl_on_policy_wandb_log, torchfort_rl_on_policy_update_rollout_buffer, &
            torchfort_rl_on_policy_train_step, torchfort_rl_on_policy_predict_explore, &
            torchfort_rl_on_policy_predict, torchfort_rl_on_policy_evaluate, &
            torchfort_rl_on_policy_save_checkpoint, torchfort_rl_on_policy_load_checkpoint, &
            torchfort_rl_on_policy_load_model, torchfort_rl_on_policy_is_ready, &
            torchfort_rl_on_policy_reset_rollout_buffer

  ! Shared with the module torchfort (which re-exports only the torchfort_rl_* names): mpi_f08's communicator and
  ! Fortran strings as C strings.
  public :: MPI_Comm, c_string

  ! The generics ktr runs take real32 and real64 arrays alike (one kind per call).

  ! mpi_f08's communicator (the same type: bind(C), one integer named MPI_VAL).
  type, bind(C) :: MPI_Comm
    integer :: MPI_VAL
  end type

  interface torchfort_rl_off_policy_create_distributed_system
    module procedure rl_off_policy_create_distributed, rl_off_policy_create_distributed_f08
  end interface
  interface torchfort_rl_off_policy_wandb_log
    module procedure rl_off_policy_wandb_log_int, rl_off_policy_wandb_log_float, rl_off_policy_wandb_log_double, &
                     rl_off_policy_wandb_log_float_int32step, rl_off_policy_wandb_log_double_int32step
  end interface
  interface torchfort_rl_off_policy_update_replay_buffer
    module procedure rl_off_policy_update_replay, rl_off_policy_update_replay_r64, rl_off_policy_update_replay_multi, &
                     rl_off_policy_update_replay_multi_r64
  end interface
  interface torchfort_rl_off_policy_predict_explore
    module procedure rl_off_policy_predict_explore, rl_off_policy_predict_explore_r64
  end interface
  interface torchfort_rl_off_policy_predict
    module procedure rl_off_policy_predict, rl_off_policy_predict_r64
  end interface
  interface torchfort_rl_off_policy_evaluate
    module procedure rl_off_policy_evaluate, rl_off_policy_evaluate_r64
  end interface
  interface torchfort_rl_on_policy_create_distributed_system
    module procedure rl_on_policy_create_distributed, rl_on_policy_create_distributed_f08
  end interface
  interface torchfort_rl_on_policy_wandb_log
    module procedure rl_on_policy_wandb_log_int, rl_on_policy_wandb_log_float, rl_on_policy_wandb_log_double, &
                     rl_on_policy_wandb_log_float_int32step, rl_on_policy_wandb_log_double_int32step
  end interface
  interface torchfort_rl_on_policy_update_rollout_buffer
    module procedure rl_on_policy_update_rollout, rl_on_policy_update_rollout_multi
  end interface

  interface
    integer(c_int) function c_rl_refused(call) bind(C, name="ktr_torchfort_rl_refused_F")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: call
    end function
    integer(c_int) function c_rl_create(name, fname, model_dev, rb_dev) &
        bind(C, name="torchfort_rl_off_policy_create_system")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, fname
      integer(c_int), value :: model_dev, rb_dev
    end function
    integer(c_int) function c_rl_create_distributed(name, fname, comm, model_dev, rb_dev) &
        bind(C, name="torchfort_rl_off_policy_create_distributed_system_F")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, fname
      integer(c_int), value :: comm, model_dev, rb_dev
    end function
    integer(c_int) function c_rl_save_checkpoint(name, dir) bind(C, name="torchfort_rl_off_policy_save_checkpoint")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, dir
    end function
    integer(c_int) function c_rl_load_checkpoint(name, dir) bind(C, name="torchfort_rl_off_policy_load_checkpoint")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, dir
    end function
    integer(c_int) function c_rl_load_model(name, dir) bind(C, name="torchfort_rl_off_policy_load_model")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, dir
    end function
    integer(c_int) function c_rl_log_int(name, metric, step, val) bind(C, name="torchfort_rl_off_policy_wandb_log_int")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name, metric
      integer(c_int64_t), value :: step
      integer(c_int), value :: val
    end function
    integer(c_int) function c_rl_log_float(name, metric, step, val) &
        bind(C, name="torchfort_rl_off_policy_wandb_log_float")
      import :: c_char, c_int, c_int64_t, c_float
      character(kind=c_char), dimension(*), intent(in) :: name, metric
      integer(c_int64_t), value :: step
      real(c_float), value :: val
    end function
    integer(c_int) function c_rl_log_double(name, metric, step, val) &
        bind(C, name="torchfort_rl_off_policy_wandb_log_double")
      import :: c_char, c_int, c_int64_t, c_double
      character(kind=c_char), dimension(*), intent(in) :: name, metric
      integer(c_int64_t), value :: step
      real(c_double), value :: val
    end function
    integer(c_int) function c_rl_is_ready(name, ready) bind(C, name="torchfort_rl_off_policy_is_ready")
      import :: c_char, c_int, c_bool
      character(kind=c_char), dimension(*), intent(in) :: name
      logical(c_bool) :: ready
    end function
    integer(c_int) function c_rl_train_step(name, p_loss, q_loss, stream) &
        bind(C, name="torchfort_rl_off_policy_train_step")
      import :: c_char, c_int, c_float, c_intptr_t
      character(kind=c_char), dimension(*), intent(in) :: name
      real(c_float) :: p_loss, q_loss
      integer(c_intptr_t), value :: stream
    end function
    integer(c_int) function c_rl_predict(name, state, act, explore, stream) bind(C, name="ktr_tf_rl_predict_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: state, act
      integer(c_int), value :: explore
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_rl_evaluate(name, state, act, reward, stream) bind(C, name="ktr_tf_rl_evaluate_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: state, act, reward
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_rl_update_replay_multi(name, state_old, act_old, state_new, reward, final_state, &
                                                     stream) bind(C, name="ktr_tf_rl_update_replay_multi_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: state_old, act_old, state_new, reward, final_state
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_rl_update_replay(name, state_old, act_old, state_new, reward, final_state, stream) &
        bind(C, name="ktr_tf_rl_update_replay_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: state_old, act_old, state_new, reward
      integer(c_int), value :: final_state
      integer(c_int64_t), value :: stream
    end function
  end interface

contains

  function c_string(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c
    c = trim(s) // c_null_char
  end function

  integer(c_int) function torchfort_rl_off_policy_create_system(sname, fname, model_dev, rb_dev) result(res)
    character(len=*), intent(in) :: sname, fname
    integer(c_int), intent(in) :: model_dev, rb_dev
    res = c_rl_create(c_string(sname), c_string(fname), model_dev, rb_dev)
  end function

  integer(c_int) function rl_off_policy_create_distributed(mname, fname, comm, model_dev, rb_dev) result(res)
    character(len=*), intent(in) :: mname, fname
    integer, intent(in) :: comm
    integer(c_int), intent(in) :: model_dev, rb_dev
    res = c_rl_create_distributed(c_string(mname), c_string(fname), int(comm, c_int), model_dev, rb_dev)
  end function

  integer(c_int) function rl_off_policy_create_distributed_f08(mname, fname, comm, model_dev, rb_dev) result(res)
    character(len=*), intent(in) :: mname, fname
    type(MPI_Comm), intent(in) :: comm
    integer(c_int), intent(in) :: model_dev, rb_dev
    res = c_rl_create_distributed(c_string(mname), c_string(fname), int(comm%MPI_VAL, c_int), model_dev, rb_dev)
  end function

  integer(c_int) function rl_off_policy_wandb_log_int(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int64), intent(in) :: step
    integer(int32), intent(in) :: val
    res = c_rl_log_int(c_string(mname), c_string(metric_name), int(step, c_int64_t), int(val, c_int))
  end function

  integer(c_int) function rl_off_policy_wandb_log_float(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int64), intent(in) :: step
    real(real32), intent(in) :: val
    res = c_rl_log_float(c_string(mname), c_string(metric_name), int(step, c_int64_t), real(val, c_float))
  end function

  integer(c_int) function rl_off_policy_wandb_log_double(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int64), intent(in) :: step
    real(real64), intent(in) :: val
    res = c_rl_log_double(c_string(mname), c_string(metric_name), int(step, c_int64_t), real(val, c_double))
  end function

  integer(c_int) function rl_off_policy_wandb_log_float_int32step(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int32), intent(in) :: step
    real(real32), intent(in) :: val
    res = c_rl_log_float(c_string(mname), c_string(metric_name), int(step, c_int64_t), real(val, c_float))
  end function

  integer(c_int) function rl_off_policy_wandb_log_double_int32step(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int32), intent(in) :: step
    real(real64), intent(in) :: val
    res = c_rl_log_double(c_string(mname), c_string(metric_name), int(step, c_int64_t), real(val, c_double))
  end function

  integer(c_int) function rl_off_policy_update_replay(mname, state_old, act_old, state_new, &
                                                      reward, final_state, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state_old, act_old, state_new
    real(real32), intent(in) :: reward
    logical, intent(in) :: final_state
    integer(int64), intent(in), optional :: stream
    res = c_rl_update_replay(c_string(mname), state_old, act_old, state_new, reward, merge(1, 0, final_state), &
                             stream_of(stream))
  end function

  integer(c_int) function rl_off_policy_update_replay_r64(mname, state_old, act_old, state_new, &
                                                          reward, final_state, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real64), dimension(..), intent(in) :: state_old, act_old, state_new
    real(real64), intent(in) :: reward
    logical, intent(in) :: final_state
    integer(int64), intent(in), optional :: stream
    res = c_rl_update_replay(c_string(mname), state_old, act_old, state_new, reward, merge(1, 0, final_state), &
                             stream_of(stream))
  end function

  integer(c_int64_t) function stream_of(stream)
    integer(int64), intent(in), optional :: stream
    stream_of = 0
    if (present(stream)) stream_of = stream
  end function

  ! Every environment's time step: states and actions (features, n_envs), rewards and terminal flags (n_envs).
  integer(c_int) function rl_off_policy_update_replay_multi(mname, state_old, act_old, state_new, &
                                                            reward, final_state, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state_old, act_old, state_new
    real(real32), intent(in) :: reward(:), final_state(:)
    integer(int64), intent(in), optional :: stream
    res = c_rl_update_replay_multi(c_string(mname), state_old, act_old, state_new, reward, final_state, &
                                   stream_of(stream))
  end function

  integer(c_int) function rl_off_policy_update_replay_multi_r64(mname, state_old, act_old, state_new, &
                                                                reward, final_state, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real64), dimension(..), intent(in) :: state_old, act_old, state_new
    real(real64), intent(in) :: reward(:), final_state(:)
    integer(int64), intent(in), optional :: stream
    res = c_rl_update_replay_multi(c_string(mname), state_old, act_old, state_new, reward, final_state, &
                                   stream_of(stream))
  end function

  integer(c_int) function torchfort_rl_off_policy_train_step(mname, p_loss_val, q_loss_val, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32) :: p_loss_val, q_loss_val
    integer(int64), intent(in), optional :: stream
    res = c_rl_train_step(c_string(mname), p_loss_val, q_loss_val, int(stream_of(stream), c_intptr_t))
  end function

  integer(c_int) function rl_off_policy_predict_explore(mname, state, act, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state
    real(real32), dimension(..) :: act
    integer(int64), intent(in), optional :: stream
    res = c_rl_predict(c_string(mname), state, act, 1, stream_of(stream))
  end function

  integer(c_int) function rl_off_policy_predict_explore_r64(mname, state, act, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real64), dimension(..), intent(in) :: state
    real(real64), dimension(..) :: act
    integer(int64), intent(in), optional :: stream
    res = c_rl_predict(c_string(mname), state, act, 1, stream_of(stream))
  end function

  integer(c_int) function rl_off_policy_predict(mname, state, act, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state
    real(real32), dimension(..) :: act
    integer(int64), intent(in), optional :: stream
    res = c_rl_predict(c_string(mname), state, act, 0, stream_of(stream))
  end function

  integer(c_int) function rl_off_policy_predict_r64(mname, state, act, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real64), dimension(..), intent(in) :: state
    real(real64), dimension(..) :: act
    integer(int64), intent(in), optional :: stream
    res = c_rl_predict(c_string(mname), state, act, 0, stream_of(stream))
  end function

  integer(c_int) function rl_off_policy_evaluate(mname, state, act, reward, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state, act
    real(real32), dimension(..) :: reward
    integer(int64), intent(in), optional :: stream
    res = c_rl_evaluate(c_string(mname), state, act, reward, stream_of(stream))
  end function

  integer(c_int) function rl_off_policy_evaluate_r64(mname, state, act, reward, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real64), dimension(..), intent(in) :: state, act
    real(real64), dimension(..) :: reward
    integer(int64), intent(in), optional :: stream
    res = c_rl_evaluate(c_string(mname), state, act, reward, stream_of(stream))
  end function

  integer(c_int) function torchfort_rl_off_policy_save_checkpoint(mname, checkpoint_dir) result(res)
    character(len=*), intent(in) :: mname, checkpoint_dir
    res = c_rl_save_checkpoint(c_string(mname), c_string(checkpoint_dir))
  end function

  integer(c_int) function torchfort_rl_off_policy_load_checkpoint(mname, checkpoint_dir) result(res)
    character(len=*), intent(in) :: mname, checkpoint_dir
    res = c_rl_load_checkpoint(c_string(mname), c_string(checkpoint_dir))
  end function

  integer(c_int) function torchfort_rl_off_policy_load_model(mname, checkpoint_dir) result(res)
    character(len=*), intent(in) :: mname, checkpoint_dir
    res = c_rl_load_model(c_string(mname), c_string(checkpoint_dir))
  end function

  integer(c_int) function torchfort_rl_off_policy_is_ready(mname, ready) result(res)
    character(len=*), intent(in) :: mname
    logical :: ready
    logical(c_bool) :: r
    r = ready
    res = c_rl_is_ready(c_string(mname), r)
    if (res == 0) ready = r
  end function

  integer(c_int) function torchfort_rl_on_policy_create_system(sname, fname, model_dev, rb_dev) result(res)
    character(len=*), intent(in) :: sname, fname
    integer(c_int), intent(in) :: model_dev, rb_dev
    res = c_rl_refused(c_string('torchfort_rl_on_policy_create_system'))
  end function

  integer(c_int) function rl_on_policy_create_distributed(mname, fname, comm, model_dev, rb_dev) result(res)
    character(len=*), intent(in) :: mname, fname
    integer, intent(in) :: comm
    integer(c_int), intent(in) :: model_dev, rb_dev
    res = c_rl_refused(c_string('torchfort_rl_on_policy_create_distributed_system'))
  end function

  integer(c_int) function rl_on_policy_create_distributed_f08(mname, fname, comm, model_dev, rb_dev) result(res)
    character(len=*), intent(in) :: mname, fname
    type(MPI_Comm), intent(in) :: comm
    integer(c_int), intent(in) :: model_dev, rb_dev
    res = c_rl_refused(c_string('torchfort_rl_on_policy_create_distributed_system'))
  end function

  integer(c_int) function rl_on_policy_wandb_log_int(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int64), intent(in) :: step
    integer(int32), intent(in) :: val
    res = c_rl_refused(c_string('torchfort_rl_on_policy_wandb_log'))
  end function

  integer(c_int) function rl_on_policy_wandb_log_float(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int64), intent(in) :: step
    real(real32), intent(in) :: val
    res = c_rl_refused(c_string('torchfort_rl_on_policy_wandb_log'))
  end function

  integer(c_int) function rl_on_policy_wandb_log_double(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int64), intent(in) :: step
    real(real64), intent(in) :: val
    res = c_rl_refused(c_string('torchfort_rl_on_policy_wandb_log'))
  end function

  integer(c_int) function rl_on_policy_wandb_log_float_int32step(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int32), intent(in) :: step
    real(real32), intent(in) :: val
    res = c_rl_refused(c_string('torchfort_rl_on_policy_wandb_log'))
  end function

  integer(c_int) function rl_on_policy_wandb_log_double_int32step(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int32), intent(in) :: step
    real(real64), intent(in) :: val
    res = c_rl_refused(c_string('torchfort_rl_on_policy_wandb_log'))
  end function

  integer(c_int) function rl_on_policy_update_rollout(mname, state, act, reward, final_state, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state, act
    real(real32), intent(in) :: reward
    logical, intent(in) :: final_state
    integer(int64), intent(in), optional :: stream
    res = c_rl_refused(c_string('torchfort_rl_on_policy_update_rollout_buffer'))
  end function

  integer(c_int) function rl_on_policy_update_rollout_multi(mname, state, act, &
                                                            reward, final_state, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state, act
    real(real32), intent(in) :: reward(:), final_state(:)
    integer(int64), intent(in), optional :: stream
    res = c_rl_refused(c_string('torchfort_rl_on_policy_update_rollout_buffer'))
  end function

  integer(c_int) function torchfort_rl_on_policy_train_step(mname, p_loss_val, q_loss_val, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32) :: p_loss_val, q_loss_val
    integer(int64), intent(in), optional :: stream
    res = c_rl_refused(c_string('torchfort_rl_on_policy_train_step'))
  end function

  integer(c_int) function torchfort_rl_on_policy_predict_explore(mname, state, act, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state
    real(real32), dimension(..) :: act
    integer(int64), intent(in), optional :: stream
    res = c_rl_refused(c_string('torchfort_rl_on_policy_predict_explore'))
  end function

  integer(c_int) function torchfort_rl_on_policy_predict(mname, state, act, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state
    real(real32), dimension(..) :: act
    integer(int64), intent(in), optional :: stream
    res = c_rl_refused(c_string('torchfort_rl_on_policy_predict'))
  end function

  integer(c_int) function torchfort_rl_on_policy_evaluate(mname, state, act, reward, stream) result(res)
    character(len=*), intent(in) :: mname
    real(real32), dimension(..), intent(in) :: state, act
    real(real32), dimension(..) :: reward
    integer(int64), intent(in), optional :: stream
    res = c_rl_refused(c_string('torchfort_rl_on_policy_evaluate'))
  end function

  integer(c_int) function torchfort_rl_on_policy_save_checkpoint(mname, checkpoint_dir) result(res)
    character(len=*), intent(in) :: mname, checkpoint_dir
    res = c_rl_refused(c_string('torchfort_rl_on_policy_save_checkpoint'))
  end function

  integer(c_int) function torchfort_rl_on_policy_load_checkpoint(mname, checkpoint_dir) result(res)
    character(len=*), intent(in) :: mname, checkpoint_dir
    res = c_rl_refused(c_string('torchfort_rl_on_policy_load_checkpoint'))
  end function

  integer(c_int) function torchfort_rl_on_policy_load_model(mname, checkpoint_dir) result(res)
    character(len=*), intent(in) :: mname, checkpoint_dir
    res = c_rl_refused(c_string('torchfort_rl_on_policy_load_model'))
  end function

  integer(c_int) function torchfort_rl_on_policy_is_ready(mname, ready) result(res)
    character(len=*), intent(in) :: mname
    logical :: ready
    res = c_rl_refused(c_string('torchfort_rl_on_policy_is_ready'))
  end function

  integer(c_int) function torchfort_rl_on_policy_reset_rollout_buffer(mname) result(res)
    character(len=*), intent(in) :: mname
    res = c_rl_refused(c_string('torchfort_rl_on_policy_reset_rollout_buffer'))
  end function

end module ktr_torchfort_rl
